package podgroup

import (
	v1 "k8s.io/api/core/v1"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Groups that can never be scheduled as written (Invalid) and pods held because the
// PodGroup they belong to does not exist, as a person and an alert see them: counted by a
// small fixed set of reasons, never by the free-form message (the group's condition, the
// pod's events and `kubectl lockstep explain` say which group, and why). Computed when the
// metrics are scraped, from the model (the Index's problems, the Members' groups), as the
// pending gangs are (pending.go): nothing is kept for them, so they are 0 again the moment
// the group is fixed or deleted or the pods leave.

// The reasons a group is Invalid, by what makes its problem (Index.Revalidate): its spec,
// its chain of parents (hierarchyProblem), or a profile's validator (topology).
const (
	// InvalidSpec: a native group whose spec or lockstep annotations do not parse (FromNative).
	InvalidSpec = "spec"
	// InvalidCycle: the group's chain of parents is a cycle, or reaches one.
	InvalidCycle = "cycle"
	// InvalidMissingParent: a CompositePodGroup of its chain of parents does not exist.
	InvalidMissingParent = "missing_parent"
	// InvalidParentIsPodGroup: a parentCompositePodGroupName of its chain names a PodGroup.
	InvalidParentIsPodGroup = "parent_is_podgroup"
	// InvalidTooDeep: its tree has more than v1alpha1.MaxTreeDepth levels above it.
	InvalidTooDeep = "too_deep"
	// InvalidTopology: a profile's validator refuses its topology constraints (a key that is
	// not a configured level, a slice level coarser than the group's Required level).
	InvalidTopology = "topology"
)

// invalidReasons are every value of lockstep_groups_invalid's reason label.
var invalidReasons = []string{InvalidCycle, InvalidMissingParent, InvalidParentIsPodGroup, InvalidTooDeep, InvalidTopology, InvalidSpec}

// The reasons a pod waits for a PodGroup that does not exist, by who is to create it (as
// missingGroupMessage tells the pod, and createdGroupLocked decides).
const (
	// WaitingLabel: the pod's scheduling.lockstep.dev/pod-group label names the PodGroup
	// (or nothing of lockstep's creates it): whoever made the pod must create it.
	WaitingLabel = "label"
	// WaitingJob: lockstep's workload controller creates its Job's PodGroup; the pods wait
	// for it for jobGroupTimeoutSeconds, then are scheduled without a gang.
	WaitingJob = "job"
	// WaitingLabelledObject: the pod's labels name a group object of another scheduler's
	// API (a scheduler-plugins PodGroup, a LeaderWorkerSet's group), which lockstep's
	// workload controller mirrors as a PodGroup; the object may not be seen yet.
	WaitingLabelledObject = "labelled_object"
	// WaitingNative: the pod's spec.schedulingGroup names a native PodGroup.
	WaitingNative = "native"
)

// waitingReasons are every value of lockstep_pods_waiting_for_group's reason label.
var waitingReasons = []string{WaitingLabel, WaitingJob, WaitingLabelledObject, WaitingNative}

// GroupProblems counts the groups that are Invalid by reason (InvalidCycle, ...), and the
// pods without a node held because the PodGroup they belong to does not exist, by reason
// (WaitingLabel, ...). Reasons with none are absent.
func (m *Model) GroupProblems() (invalid, waiting map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	invalid, waiting = map[string]int{}, map[string]int{}
	for _, g := range m.index.entries {
		if g.Exists() && g.problem != "" {
			invalid[m.index.invalidReason(g)]++
		}
	}
	for k := range m.members.Unbound() {
		if m.index.Get(k).Exists() {
			continue
		}
		for mem := range m.members.UnboundIn(k) {
			waiting[m.waitingReasonLocked(mem.Pod, k)]++
		}
	}
	return invalid, waiting
}

// invalidReason is the reason label of the problem of g, an Invalid group: its spec's, its
// chain of parents', else a validator's. Revalidate finds the problem in that order.
func (ix *Index) invalidReason(g *Group) string {
	if g.specProblem != "" {
		return InvalidSpec
	}
	if r, _ := ix.hierarchyProblem(g.key); r != "" {
		return r
	}
	return InvalidTopology
}

// waitingReasonLocked is the reason label of a pod waiting for PodGroup k, which does not
// exist: who is to create k.
func (m *Model) waitingReasonLocked(pod *v1.Pod, k Key) string {
	if k.Native() {
		return WaitingNative
	}
	if u, _, created := m.createdGroupLocked(pod, k); created {
		if u == filing.LabelledUnit(k.Namespace+"/"+k.Name) {
			return WaitingLabelledObject
		}
		return WaitingJob
	}
	return WaitingLabel
}

// The gauges' help: what each reason means (the metrics reference shows it).
const (
	invalidGroupsHelp   = "PodGroups and CompositePodGroups that can never be scheduled as written (condition reason Invalid; their pods are held), by reason: cycle (their chain of parents is a cycle), missing_parent (a parent CompositePodGroup does not exist), parent_is_podgroup (a parentCompositePodGroupName names a PodGroup), too_deep (more than 4 levels), topology (a topology key that is not a configured level, or a slice level coarser than the Required level), spec (a native group whose spec or lockstep annotations do not parse). The groups below a broken chain count too. 0 again once the groups are fixed or deleted."
	waitingForGroupHelp = "Pods without a node held because the PodGroup they belong to does not exist, by reason: label (their scheduling.lockstep.dev/pod-group label names it: nothing of lockstep's creates it), job (lockstep's workload controller creates their Job's; after jobGroupTimeoutSeconds they are scheduled without a gang and no longer count), labelled_object (lockstep's workload controller mirrors the group object of another scheduler's API their labels name, which may not exist yet), native (their spec.schedulingGroup names a native PodGroup). 0 again once the group exists or the pods are gone."
)

var (
	invalidGroupsDesc   = k8smetrics.NewDesc(Subsystem+"_groups_invalid", invalidGroupsHelp, []string{"reason"}, nil, k8smetrics.ALPHA, "")
	waitingForGroupDesc = k8smetrics.NewDesc(Subsystem+"_pods_waiting_for_group", waitingForGroupHelp, []string{"reason"}, nil, k8smetrics.ALPHA, "")
)

// problemsCollector reports the invalid groups and the pods waiting for a missing group of
// a model at each scrape: of model, or else of pendingSource (the scheduler's, which
// NewComponents sets). Every reason is reported, at 0 when none has it (or without a model),
// so that alerts and dashboards see the series from the start.
type problemsCollector struct {
	k8smetrics.BaseStableCollector
	model *Model
}

func (*problemsCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) {
	ch <- invalidGroupsDesc
	ch <- waitingForGroupDesc
}

func (c *problemsCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
	var invalid, waiting map[string]int
	m := c.model
	if m == nil {
		m = pendingSource.Load()
	}
	if m != nil {
		invalid, waiting = m.GroupProblems()
	}
	for _, r := range invalidReasons {
		ch <- k8smetrics.NewLazyConstMetric(invalidGroupsDesc, k8smetrics.GaugeValue, float64(invalid[r]), r)
	}
	for _, r := range waitingReasons {
		ch <- k8smetrics.NewLazyConstMetric(waitingForGroupDesc, k8smetrics.GaugeValue, float64(waiting[r]), r)
	}
}
