package coscheduling

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

const ns = "ns"

// member returns pending pod <group>-<i> of lockstep's profile, labelled for
// scheduler-plugins PodGroup group (not for a lockstep PodGroup), created i seconds after
// lt.Epoch and controlled by Job "<group>-job".
func member(group string, i int) *st.PodWrapper {
	p := lt.GroupPod(ns, fmt.Sprintf("%s-%d", group, i), "").Label(Label, group).Phase(v1.PodPending).
		CreationTimestamp(metav1.NewTime(lt.Epoch.Add(time.Duration(i) * time.Second)))
	return lt.ControlledBy(p, "batch/v1", "Job", group+"-job", "uid-"+group+"-job")
}

// memberJob returns the Job of group's members (member).
func memberJob(group string) *batchv1.Job {
	return lt.MakeJob().Namespace(ns).Name(group+"-job").UID("uid-"+group+"-job").TemplateLabel(Label, group).Obj()
}

// members returns member i of PodGroup group in states[i]: "pending" (not bound), "bound"
// (bound, not running yet), "running", "succeeded" or "failed".
func members(group string, states ...string) []*v1.Pod {
	out := make([]*v1.Pod, len(states))
	for i, state := range states {
		p := member(group, i)
		switch state {
		case "pending":
		case "bound":
			p.Node("n1")
		case "running":
			p.Node("n1").Phase(v1.PodRunning)
		case "succeeded":
			p.Node("n1").Phase(v1.PodSucceeded)
		case "failed":
			p.Node("n1").Phase(v1.PodFailed)
		default:
			panic("unknown pod state " + state)
		}
		out[i] = p.Obj()
	}
	return out
}

// TestStatusOf proves that statusOf keeps a PodGroup's status as scheduler-plugins' PodGroup
// controller does (pkg/controllers/podgroup_controller.go): Pending until minMember pods
// exist, Scheduling then (occupiedBy filled from a member's owners) while fewer run (bound
// or not: its API has no Scheduled phase), Running once minMember run or succeeded, Failed
// when a pod failed and minMember failed, run or succeeded, Finished when minMember
// succeeded (before Failed); Finished and Failed are final; back to Pending when pods go;
// minMember 0 counts as 1; scheduleStartTime is set when the group leaves Pending, once.
func TestStatusOf(t *testing.T) {
	now := metav1.NewTime(lt.Epoch.Add(time.Hour))
	start := metav1.NewTime(lt.Epoch.Add(time.Minute))
	const occ = "ns/g-job" // the owner of members of "g"
	tests := []struct {
		name      string
		minMember int32
		status    podGroupStatus
		pods      []*v1.Pod
		want      podGroupStatus
	}{
		// Pending.
		{name: "new, no pods", minMember: 2,
			want: podGroupStatus{Phase: PhasePending}},
		{name: "new, fewer pods than minMember", minMember: 2, pods: members("g", "pending"),
			want: podGroupStatus{Phase: PhasePending}},
		{name: "pending, fewer pods than minMember, one running", minMember: 2, status: podGroupStatus{Phase: PhasePending},
			pods: members("g", "running"),
			want: podGroupStatus{Phase: PhasePending, Running: 1}},
		// Scheduling.
		{name: "pending, minMember pods exist", minMember: 2, status: podGroupStatus{Phase: PhasePending},
			pods: members("g", "pending", "pending"),
			want: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: now}},
		{name: "new, minMember pods exist already", minMember: 2, pods: members("g", "pending", "pending"),
			want: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: now}},
		{name: "scheduling, some bound: scheduleStartTime kept", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "bound", "pending"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start}},
		{name: "a failed pod and too few others is not Failed", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "failed", "pending"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start, Failed: 1}},
		{name: "running again below minMember: Scheduling", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "running", "pending"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start, Running: 1}},
		// Scheduled.
		{name: "minMember bound", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "bound", "bound"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start}},
		{name: "minMember bound, fewer running", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "running", "bound"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start, Running: 1}},
		// Running.
		{name: "minMember running", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "running", "running"),
			want:   podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2}},
		{name: "running and succeeded make minMember", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "running", "succeeded"),
			want:   podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 1, Succeeded: 1}},
		{name: "more pods than minMember", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods:   members("g", "running", "running", "pending"),
			want:   podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2}},
		{name: "new, minMember running at once", minMember: 2, pods: members("g", "running", "running"),
			want: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: now, Running: 2}},
		// Failed.
		{name: "a failed pod and the rest running", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "failed", "running"),
			want:   podGroupStatus{Phase: PhaseFailed, OccupiedBy: occ, ScheduleStartTime: start, Running: 1, Failed: 1}},
		{name: "a failed pod and the rest succeeded", minMember: 3,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 3},
			pods:   members("g", "succeeded", "failed", "succeeded"),
			want:   podGroupStatus{Phase: PhaseFailed, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2, Failed: 1}},
		{name: "all failed", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "failed", "failed"),
			want:   podGroupStatus{Phase: PhaseFailed, OccupiedBy: occ, ScheduleStartTime: start, Failed: 2}},
		// Finished.
		{name: "minMember succeeded", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "succeeded", "succeeded"),
			want:   podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2}},
		{name: "Finished before Failed", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 3},
			pods:   members("g", "succeeded", "failed", "succeeded"),
			want:   podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2, Failed: 1}},
		// Final phases.
		{name: "Finished is final", minMember: 2,
			status: podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2},
			pods:   members("g", "failed", "pending", "running"),
			want:   podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2}},
		{name: "Finished is final with no pods", minMember: 2,
			status: podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2},
			want:   podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 2}},
		{name: "Failed is final", minMember: 2,
			status: podGroupStatus{Phase: PhaseFailed, OccupiedBy: occ, ScheduleStartTime: start, Running: 1, Failed: 1},
			pods:   members("g", "succeeded", "succeeded"),
			want:   podGroupStatus{Phase: PhaseFailed, OccupiedBy: occ, ScheduleStartTime: start, Running: 1, Failed: 1}},
		// Back to Pending.
		{name: "pods gone: Pending, counts cleared, scheduleStartTime and occupiedBy kept", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			want:   podGroupStatus{Phase: PhasePending, OccupiedBy: occ, ScheduleStartTime: start}},
		{name: "fewer pods than minMember again: Pending", minMember: 2,
			status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 2},
			pods:   members("g", "running"),
			want:   podGroupStatus{Phase: PhasePending, OccupiedBy: occ, ScheduleStartTime: start, Running: 1}},
		// minMember 0 is 1.
		{name: "minMember 0, no pods", status: podGroupStatus{Phase: PhasePending},
			want: podGroupStatus{Phase: PhasePending}},
		{name: "minMember 0, a pod", status: podGroupStatus{Phase: PhasePending}, pods: members("g", "pending"),
			want: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: now}},
		{name: "minMember 0, a bound pod", status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods: members("g", "bound"),
			want: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start}},
		{name: "minMember 0, a running pod", status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: occ, ScheduleStartTime: start},
			pods: members("g", "running"),
			want: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 1}},
		{name: "minMember 0, a succeeded pod", status: podGroupStatus{Phase: PhaseRunning, OccupiedBy: occ, ScheduleStartTime: start, Running: 1},
			pods: members("g", "succeeded"),
			want: podGroupStatus{Phase: PhaseFinished, OccupiedBy: occ, ScheduleStartTime: start, Succeeded: 1}},
		// occupiedBy.
		{name: "occupiedBy is kept once set", minMember: 2,
			status: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/someone-else", ScheduleStartTime: start},
			pods:   members("g", "pending", "pending"),
			want:   podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/someone-else", ScheduleStartTime: start}},
		{name: "occupiedBy names every owner of the oldest member, sorted", minMember: 2, status: podGroupStatus{Phase: PhasePending},
			pods: func() []*v1.Pod {
				ps := members("g", "pending", "pending")
				ps[0].OwnerReferences = []metav1.OwnerReference{{Kind: "MPIJob", Name: "zeta"}, {Kind: "Job", Name: "alpha"}}
				return ps
			}(),
			want: podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/alpha,ns/zeta", ScheduleStartTime: now}},
		{name: "members without owners: no occupiedBy", minMember: 2, status: podGroupStatus{Phase: PhasePending},
			pods: func() []*v1.Pod {
				ps := members("g", "pending", "pending")
				for _, p := range ps {
					p.OwnerReferences = nil
				}
				return ps
			}(),
			want: podGroupStatus{Phase: PhaseScheduling, ScheduleStartTime: now}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := &podGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g", CreationTimestamp: metav1.NewTime(lt.Epoch)},
				Spec:       podGroupSpec{MinMember: tc.minMember},
				Status:     tc.status,
			}
			before := pg.Status
			got := statusOf(pg, tc.pods, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("statusOf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, pg.Status); diff != "" {
				t.Errorf("statusOf changed the PodGroup it read (-before +after):\n%s", diff)
			}
			// The status is a fixed point: computed again from itself, it stays.
			pg.Status = got
			if diff := cmp.Diff(got, statusOf(pg, tc.pods, metav1.NewTime(now.Add(time.Hour)))); diff != "" {
				t.Errorf("statusOf of its own result, later (-first +second):\n%s", diff)
			}
		})
	}
}

// TestStatusOfFollowsAGroup walks one PodGroup through its life, one status after the other,
// as scheduler-plugins' controller would see it reconcile after each pod event.
func TestStatusOfFollowsAGroup(t *testing.T) {
	pg := &podGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}, Spec: podGroupSpec{MinMember: 3}}
	steps := []struct {
		pods      []string
		wantPhase string
	}{
		{nil, PhasePending},
		{[]string{"pending"}, PhasePending},
		{[]string{"pending", "pending"}, PhasePending},
		{[]string{"pending", "pending", "pending"}, PhaseScheduling},
		{[]string{"bound", "pending", "bound"}, PhaseScheduling},
		{[]string{"bound", "bound", "bound"}, PhaseScheduling},
		{[]string{"running", "bound", "running"}, PhaseScheduling},
		{[]string{"running", "running", "running"}, PhaseRunning},
		{[]string{"succeeded", "running", "succeeded"}, PhaseRunning},
		{[]string{"succeeded", "succeeded", "succeeded"}, PhaseFinished},
		{nil, PhaseFinished},
	}
	var started metav1.Time
	for i, s := range steps {
		now := metav1.NewTime(lt.Epoch.Add(time.Duration(i) * time.Minute))
		pg.Status = statusOf(pg, members("g", s.pods...), now)
		if pg.Status.Phase != s.wantPhase {
			t.Fatalf("step %d (pods %v): phase %q, want %q", i, s.pods, pg.Status.Phase, s.wantPhase)
		}
		if pg.Status.Phase == PhasePending {
			if !pg.Status.ScheduleStartTime.IsZero() {
				t.Errorf("step %d: scheduleStartTime %v while Pending, want none", i, pg.Status.ScheduleStartTime)
			}
			continue
		}
		if started.IsZero() {
			started = now
		}
		if !pg.Status.ScheduleStartTime.Equal(&started) {
			t.Errorf("step %d: scheduleStartTime %v, want %v (when the group left Pending)", i, pg.Status.ScheduleStartTime, started)
		}
	}
	if started.IsZero() {
		t.Fatal("the group never left Pending")
	}
}
