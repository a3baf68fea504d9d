package topology

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
)

// Plan is where the planner decided the pending members of one tree go. Every member of the
// tree reuses it, and capacity it promises is not promised to another tree while it lives.
type Plan struct {
	Root podgroup.Key
	// Pods maps each planned member to its node and what it requests there.
	Pods map[types.UID]PlannedPod
	// Domains are the nodes a group's members must stay on (the group's domain), for
	// members the plan did not place (created later, or beyond what fit).
	Domains map[podgroup.Key]sets.Set[string]
	// Refused are groups the plan could not place (the tree is ready without them), with
	// the reason; their members are refused until the tree is planned again.
	Refused map[podgroup.Key]string
	// Left are pending members of a tree that is one PodGroup the plan looked at and did
	// not place (its minimum met without them, no room for more): they wait, rather than take
	// the room the plan gives their siblings, until the tree is planned again.
	Left sets.Set[types.UID]
	// Chosen names the domain each group was placed in, e.g. "rack r3", for logs.
	Chosen map[podgroup.Key]string
	// Unplanned records that the tree is left to the scheduler's own scoring (its members
	// have preferences a plan would not honor), so that its members need not look again.
	Unplanned bool
	// Expires is when the plan stops promising capacity (planTTLSeconds after it was made).
	Expires time.Time
	// Victims are the pods evicted to make room for the plan (preemption.go), with the pods
	// already leaving the nodes it places members on (awaitLeaving), and Freed the domain
	// they leave; the tree's members wait until every victim is gone.
	Victims map[types.UID]types.NamespacedName
	Freed   string
	// VictimNodes are the nodes the victims are on.
	VictimNodes sets.Set[string]
	// Holds are the domains the plan's exclusive groups take (exclusive.go).
	Holds []hold
	// Priority is the tree's. FollowersTimeout is how long, once the tree's leaders are
	// allowed, the room the plan gives the followers of a PodGroup whose leaders bind first
	// (podgroup.IsFollower) is held for them (Reservations.holdForFollowers).
	Priority         int32
	FollowersTimeout time.Duration
}

// leave records that the plan did not place a pending member.
func (p *Plan) leave(uid types.UID) {
	if p.Left == nil {
		p.Left = sets.New[types.UID]()
	}
	p.Left.Insert(uid)
}

// PlannedPod is one member's place in a plan.
type PlannedPod struct {
	Node    string
	Request capacity.Resources
}

// Plans holds the live plans of every tree, for every profile's LockstepTopology: a plan
// made by one profile's plugin promises capacity to all. A plan is dropped when the
// attempt it was made for ends (the tree was allowed or rejected), when a member fails on
// its planned node, or when it expires. The model asks the plans with its own lock held
// (AwaitsVictims): the plans never call the model with theirs.
type Plans struct {
	mu     sync.Mutex
	byRoot map[podgroup.Key]*Plan
	// refusals are, per tree, the nodes Filter refused a member planned there: the next plans
	// of the tree do without them for a while, so that a refused plan is never made twice.
	refusals map[podgroup.Key][]refusal
	now      func() time.Time
	// reservations are the domains held for starving trees (reservations.go), and the room
	// held for followers.
	reservations *reservation.Reservations
	// followerRoom is, per tree whose attempt just ended, the room its plan gave followers:
	// held once the tree is heard scheduled (its leaders were allowed), forgotten when its
	// next attempt ends.
	followerRoom map[podgroup.Key]*reservation.Reservation
	// victimThere reports whether a victim of a preempting plan still exists (nil: none is
	// looked for): such a plan, and its members' nominations, outlive its expiry until they
	// are gone, however long their graceful termination takes.
	victimThere func(uid types.UID, ref types.NamespacedName) bool
}

// refusal is a node Filter refused a planned member, and why.
type refusal struct {
	node, why string
	until     time.Time
}

// maxRefusals bounds the nodes a tree's plans do without.
const maxRefusals = 16

var _ podgroup.RoundObserver = &Plans{}

// NewPlans returns an empty store.
func NewPlans() *Plans {
	return &Plans{byRoot: map[podgroup.Key]*Plan{}, refusals: map[podgroup.Key][]refusal{}, now: time.Now,
		reservations: reservation.New(time.Now), followerRoom: map[podgroup.Key]*reservation.Reservation{}}
}

// Get returns the live plan of root, or nil.
func (p *Plans) Get(root podgroup.Key) *Plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.liveLocked(root)
}

func (p *Plans) liveLocked(root podgroup.Key) *Plan {
	plan := p.byRoot[root]
	if plan != nil && p.now().After(plan.Expires) {
		if p.victimLeftLocked(plan) {
			// Its victims still terminate (a checkpointing job may take ten minutes): the
			// room they free is the tree's, not the next pod's.
			plan.Expires = p.now().Add(victimsRecheck)
			return plan
		}
		delete(p.byRoot, root)
		return nil
	}
	return plan
}

// victimsRecheck is how long a preempting plan past its expiry is kept before its victims
// are counted again.
const victimsRecheck = 30 * time.Second

// WatchVictims tells the plans how to see whether a victim of a preempting plan still
// exists: such a plan lives until none does.
func (p *Plans) WatchVictims(there func(uid types.UID, ref types.NamespacedName) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.victimThere = there
}

// VictimsLeft counts the victims of plan that still exist.
func (p *Plans) VictimsLeft(plan *Plan) int {
	p.mu.Lock()
	there := p.victimThere
	p.mu.Unlock()
	left := 0
	for uid, ref := range plan.Victims {
		if there != nil && there(uid, ref) {
			left++
		}
	}
	return left
}

// victimLeftLocked reports whether a victim of plan still exists; it looks no further than
// the first one that does.
func (p *Plans) victimLeftLocked(plan *Plan) bool {
	if p.victimThere == nil {
		return false
	}
	for uid, ref := range plan.Victims {
		if p.victimThere(uid, ref) {
			return true
		}
	}
	return false
}

// AwaitsVictims reports whether root's tree has a live plan made by preempting (preempted),
// and whether pods it evicts are still there (waiting): its members go where the plan says
// once they are gone, and news before that cannot help it (podgroup.RoundObserver).
func (p *Plans) AwaitsVictims(root podgroup.Key) (preempted, waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	plan := p.liveLocked(root)
	if plan == nil || len(plan.Victims) == 0 {
		return false, false
	}
	return true, p.victimLeftLocked(plan)
}

// Store keeps a plan for its root, replacing any earlier one.
func (p *Plans) Store(plan *Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byRoot[plan.Root] = plan
}

// Drop forgets the plan of root and reports whether there was one; the next member to be
// scheduled plans the tree again.
func (p *Plans) Drop(root podgroup.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.byRoot[root]
	delete(p.byRoot, root)
	return ok
}

// AttemptEnded drops the plan of a tree whose attempt ended: whatever was planned is
// either placed or stale. A preempting plan stays: the tree's attempts fail while it waits
// for its victims, and the plan is what it waits for.
func (p *Plans) AttemptEnded(root podgroup.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	plan := p.byRoot[root]
	delete(p.followerRoom, root)
	if r := followerRoom(plan, p.now()); r != nil {
		p.followerRoom[root] = r
	}
	if plan != nil && len(plan.Victims) > 0 {
		return
	}
	delete(p.byRoot, root)
}

// TreeScheduled releases what was held for a tree that was scheduled: its reservation, and
// the room held for its followers (they are placed). If the attempt that scheduled it placed
// leaders whose followers do not exist yet, their planned room is held for them now.
func (p *Plans) TreeScheduled(root podgroup.Key) {
	p.mu.Lock()
	r := p.followerRoom[root]
	delete(p.followerRoom, root)
	p.mu.Unlock()
	p.reservations.TreeScheduled(root)
	if r != nil {
		p.reservations.HoldForFollowers(r)
	}
}

// followerRoom is the room plan gives followers (podgroup.IsFollower), to be held for them
// once the tree's leaders are allowed; nil if it gives none.
func followerRoom(plan *Plan, now time.Time) *reservation.Reservation {
	if plan == nil {
		return nil
	}
	need := map[string]capacity.Resources{}
	n := 0
	for uid, pp := range plan.Pods {
		if !podgroup.IsFollowerUID(uid) {
			continue
		}
		r := need[pp.Node]
		r.Add(pp.Request)
		need[pp.Node] = r
		n++
	}
	if n == 0 {
		return nil
	}
	timeout := plan.FollowersTimeout
	if timeout <= 0 {
		timeout = podgroup.DefaultFollowersTimeout
	}
	return &reservation.Reservation{Root: plan.Root, Priority: plan.Priority, Level: -1, Domain: fmt.Sprintf("held for its %d followers", n),
		Need: need, Pods: fmt.Sprintf("%d followers", n), Since: now, Deadline: now.Add(timeout), Expires: now.Add(timeout)}
}

// TreeGone forgets everything kept for a group that is gone: its plan, the nodes its plans
// did without, the room its followers were to get, and its reservations.
func (p *Plans) TreeGone(root podgroup.Key) {
	p.mu.Lock()
	delete(p.byRoot, root)
	delete(p.refusals, root)
	delete(p.followerRoom, root)
	p.mu.Unlock()
	p.reservations.TreeGone(root)
}

// Sizes counts what the plans keep, per kind (diagnostics: flat while trees come and go).
func (p *Plans) Sizes() map[string]int {
	p.mu.Lock()
	out := map[string]int{"plans": len(p.byRoot), "refusals": len(p.refusals), "followerRoom": len(p.followerRoom)}
	p.mu.Unlock()
	for k, v := range p.reservations.Sizes() {
		out[k] = v
	}
	return out
}

// Reservations returns the domains held for starving trees.
func (p *Plans) Reservations() *reservation.Reservations { return p.reservations }

// Promised returns, per node, the capacity that live plans of trees other than except
// promised to members still pending (members with a reservation are in the scheduler's
// snapshot already; deleted ones need nothing), and the members it counted.
// pending is asked without the plans' lock: it asks the model, which asks the plans with its
// own lock held (AwaitsVictims).
func (p *Plans) Promised(except podgroup.Key, pending func(types.UID) bool) (map[string]capacity.Resources, sets.Set[types.UID]) {
	var plans []*Plan
	p.mu.Lock()
	for root := range p.byRoot {
		if root == except {
			continue
		}
		if plan := p.liveLocked(root); plan != nil {
			plans = append(plans, plan)
		}
	}
	p.mu.Unlock()
	out, counted := map[string]capacity.Resources{}, sets.New[types.UID]()
	for _, plan := range plans {
		for uid, pp := range plan.Pods {
			if !pending(uid) && !podgroup.IsFollowerUID(uid) {
				continue
			}
			r := out[pp.Node]
			r.Add(pp.Request)
			out[pp.Node] = r
			counted.Insert(uid)
		}
	}
	return out, counted
}

// Evicting returns the pods that live plans of trees other than except are evicting, and
// their nodes: they leave, and a dry run that took them again would only ask for their deletion twice.
func (p *Plans) Evicting(except podgroup.Key) gangpreemption.Evictions {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := gangpreemption.Evictions{Pods: sets.New[types.UID](), Nodes: sets.New[string]()}
	for root := range p.byRoot {
		if root == except {
			continue
		}
		if plan := p.liveLocked(root); plan != nil {
			for uid := range plan.Victims {
				out.Pods.Insert(uid)
			}
			for n := range plan.VictimNodes {
				out.Nodes.Insert(n)
			}
		}
	}
	return out
}

// Holds returns the domains that live plans of trees other than except give to exclusive
// groups.
func (p *Plans) Holds(except podgroup.Key) []hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hold
	for root := range p.byRoot {
		if root == except {
			continue
		}
		if plan := p.liveLocked(root); plan != nil {
			out = append(out, plan.Holds...)
		}
	}
	return out
}

// Refuse records that Filter refused a member of root's plan on node, for why; the tree's
// plans do without the node for ttl.
func (p *Plans) Refuse(root podgroup.Key, node, why string, ttl time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.liveRefusalsLocked(root)
	for i, r := range list {
		if r.node == node {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	list = append(list, refusal{node: node, why: why, until: p.now().Add(ttl)})
	if len(list) > maxRefusals {
		list = list[len(list)-maxRefusals:]
	}
	p.refusals[root] = list
}

// Refusals returns the nodes root's plans do without, and why.
func (p *Plans) Refusals(root podgroup.Key) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for _, r := range p.liveRefusalsLocked(root) {
		out[r.node] = r.why
	}
	return out
}

func (p *Plans) liveRefusalsLocked(root podgroup.Key) []refusal {
	var live []refusal
	now := p.now()
	for _, r := range p.refusals[root] {
		if now.Before(r.until) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		delete(p.refusals, root)
		return nil
	}
	p.refusals[root] = live
	return live
}
