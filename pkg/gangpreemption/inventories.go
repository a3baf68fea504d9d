package gangpreemption

import (
	"fmt"
	"slices"
)

// Inventories kept from one decision to the next. A shape's bounds are kept for the shape
// alone (bounds.go), so where gangs differ in size or requests, most decisions are the first
// of their shape, and each read every pod of every node to bound every domain: at 15,000
// nodes, 70 ms of a decision's 75. Yet what a domain's bound reads of its nodes, its hosts'
// free room and its candidate victims (bounder.hosts, bounder.shares), depends on the tree
// only through which pods it may take: those of priority below a threshold (the tree's
// priority preempting, the one above reserving), its own pods aside, which are on domains
// the decision bounds afresh anyway (decision.mine). So each domain's inventory is kept by
// threshold, with what it was read from (reading), and a decision of a new shape whose
// threshold has inventories bounds a domain from its inventory while it stands: the bound's
// arithmetic, no pod read. The inventory stands exactly while a bound read with it would
// (bounds.go), and the bound found from it is kept for the shape with the same reading.

// inventory is one domain's hosts and candidate victims, as bounderOf read them, without the
// victims' units (a bound reads only their numbers; the dry runs read units afresh), with what
// they were read from.
type inventory struct {
	hosts  []hostRoom
	shares []share
	reading
}

// inventoryOf keeps what b read, from r.
func inventoryOf(b *bounder, r reading) inventory {
	shares := slices.Clone(b.shares)
	for i := range shares {
		shares[i].unit = nil
	}
	return inventory{hosts: b.hosts, shares: shares, reading: r}
}

// bounder returns a bounder of the inventory for the decision's tree. The inventory's lists
// are shared: a bound only reads them.
func (inv inventory) bounder(run *decision) *bounder {
	return &bounder{hosts: inv.hosts, shares: inv.shares, need: run.need, slot: run.slot, members: int64(len(run.members))}
}

// threshold is what a domain's inventory reads of the tree: pods of priority below it may be
// taken (Mode.takes).
func (run *decision) threshold() string {
	t := int64(run.priority)
	if run.mode == Reserve {
		t++
	}
	return fmt.Sprint(t)
}
