package gangpreemption

import "time"

// keptBy is what is kept for one key (a shape's bounds, a threshold's inventories), by place
// among the domains the last decision of the key was offered: the offered domains change only
// with the topology, so a decision reads a kept value by its place, not by a lookup. ids
// holds each domain's id at its place, has whether a value is kept there.
type keptBy[V any] struct {
	key  string
	used time.Time
	ids  []string
	vals []V
	has  []bool
}

// keptFor returns what is kept for key in m (a new keptBy where nothing is), used now, placed as
// domains.
func keptFor[V any](m map[string]*keptBy[V], key string, now time.Time, domains []Domain) *keptBy[V] {
	k := m[key]
	if k == nil {
		k = &keptBy[V]{key: key}
	}
	k.used = now
	k.align(domains)
	return k
}

// keepRecent puts k in m (made where nil), and forgets the least recently used keys beyond
// most.
func keepRecent[V any](m map[string]*keptBy[V], k *keptBy[V], most int) map[string]*keptBy[V] {
	if m == nil {
		m = map[string]*keptBy[V]{}
	}
	m[k.key] = k
	for len(m) > most {
		var oldest *keptBy[V]
		for _, s := range m {
			if oldest == nil || s.used.Before(oldest.used) {
				oldest = s
			}
		}
		delete(m, oldest.key)
	}
	return m
}

// align places the kept values at the places of domains, which a decision is offered: as they
// are where the domains are the same as last time, else moved by id (a domain no longer
// offered is forgotten).
func (k *keptBy[V]) align(domains []Domain) {
	same := len(k.ids) == len(domains)
	for i := 0; same && i < len(domains); i++ {
		same = k.ids[i] == domains[i].id()
	}
	if same {
		return
	}
	at := make(map[string]int, len(k.ids))
	for i, id := range k.ids {
		if k.has[i] {
			at[id] = i
		}
	}
	ids, vals, has := make([]string, len(domains)), make([]V, len(domains)), make([]bool, len(domains))
	for i, d := range domains {
		ids[i] = d.id()
		if j, ok := at[ids[i]]; ok {
			vals[i], has[i] = k.vals[j], true
		}
	}
	k.ids, k.vals, k.has = ids, vals, has
}

// get returns the value kept for the domain of id at place i.
func (k *keptBy[V]) get(id string, i int) (V, bool) {
	if i < len(k.ids) && k.ids[i] == id && k.has[i] {
		return k.vals[i], true
	}
	var none V
	return none, false
}

// set keeps v for the domain at place i of the domains k was placed as.
func (k *keptBy[V]) set(i int, v V) {
	k.vals[i], k.has[i] = v, true
}

// forget drops the value kept for the domain of id, expected at place i.
func (k *keptBy[V]) forget(id string, i int) {
	var none V
	if i < len(k.ids) && k.ids[i] == id {
		k.has[i], k.vals[i] = false, none
		return
	}
	for j := range k.ids {
		if k.ids[j] == id {
			k.has[j], k.vals[j] = false, none
		}
	}
}

// kept counts the values kept.
func (k *keptBy[V]) kept() int {
	n := 0
	for _, h := range k.has {
		if h {
			n++
		}
	}
	return n
}
