// Package testing builds the objects of lockstep's tests in the dialect of upstream's
// scheduler testing package (k8s.io/kubernetes/pkg/scheduler/testing, imported as st):
// a Make function, chained setters, Obj. Pods and nodes are upstream's st.PodWrapper and
// st.NodeWrapper; this package adds lockstep's groups, Jobs, and the pods and nodes every
// lockstep test needs (a member of a group, a node at a place in the topology), so that
// every package's tests speak one dialect.
package testing

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// SchedulerName is the profile lockstep's tests schedule with.
const SchedulerName = "lockstep-scheduler"

// Epoch is the creation time of the objects built here unless a test sets another.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Topology levels of the tests: lockstep's default levels.
const (
	ZoneKey  = "topology.kubernetes.io/zone"
	BlockKey = "topology.kubernetes.io/block"
	RackKey  = "topology.kubernetes.io/rack"
	HostKey  = v1.LabelHostname
)
