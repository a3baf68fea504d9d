package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestCreateValidation(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "api")
	ctx := context.Background()
	tests := []struct {
		name string
		pg   *v1alpha1.PodGroup
		cpg  *v1alpha1.CompositePodGroup
		want string // "" for accepted
	}{
		{name: "gang", pg: lt.MakePodGroup().Namespace(ns).Name("ok-gang").Gang(2).Obj()},
		{name: "basic", pg: lt.MakePodGroup().Namespace(ns).Name("ok-basic").Obj()},
		{name: "no policy", pg: func() *v1alpha1.PodGroup {
			p := lt.MakePodGroup().Namespace(ns).Name("none").Gang(1).Obj()
			p.Spec.SchedulingPolicy = v1alpha1.PodGroupSchedulingPolicy{}
			return p
		}(), want: "exactly one of basic or gang must be set"},
		{name: "both policies", pg: func() *v1alpha1.PodGroup {
			p := lt.MakePodGroup().Namespace(ns).Name("both").Gang(1).Obj()
			p.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
			return p
		}(), want: "exactly one of basic or gang must be set"},
		{name: "minCount 0", pg: lt.MakePodGroup().Namespace(ns).Name("zero").Gang(0).Obj(), want: "should be greater than or equal to 1"},
		{name: "scheduleTimeoutSeconds 0", pg: lt.MakePodGroup().Namespace(ns).Name("timeout").Gang(1).ScheduleTimeout(0).Obj(),
			want: "scheduleTimeoutSeconds"},
		{name: "topology label key", pg: lt.MakePodGroup().Namespace(ns).Name("rack").Gang(1).Topology(v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/rack"}).Obj()},
		{name: "topology key not a label key", pg: lt.MakePodGroup().Namespace(ns).Name("badkey").Gang(1).Topology(v1alpha1.TopologyConstraint{Key: "not a/label/key"}).Obj(), want: "spec.schedulingConstraints.topology[0].key"},
		{name: "topology key name too long", pg: lt.MakePodGroup().Namespace(ns).Name("longkey").Gang(1).Topology(v1alpha1.TopologyConstraint{Key: "example.com/" + strings.Repeat("a", 64)}).Obj(), want: "at most 63 characters"},
		{name: "required and preferred", pg: lt.MakePodGroup().Namespace(ns).Name("reqpref").Gang(1).Topology(
			v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/block"},
			v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyPreferred}).Obj()},
		{name: "two required keys", pg: lt.MakePodGroup().Namespace(ns).Name("tworeq").Gang(1).Topology(
			v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/block"},
			v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyRequired}).Obj(), want: "at most one Required topology key"},
		{name: "unknown mode", pg: lt.MakePodGroup().Namespace(ns).Name("mode").Gang(1).Topology(
			v1alpha1.TopologyConstraint{Key: "topology.kubernetes.io/rack", Mode: "Sometimes"}).Obj(), want: "Unsupported value"},
		{name: "parent name not a DNS name", pg: lt.MakePodGroup().Namespace(ns).Name("badparent").Gang(1).Parent("Not_A_Name").Obj(), want: "parentCompositePodGroupName"},
		{name: "composite gang", cpg: lt.MakeCompositePodGroup().Namespace(ns).Name("ok-cpg").Gang(2).Obj()},
		{name: "composite minGroupCount 0", cpg: lt.MakeCompositePodGroup().Namespace(ns).Name("zero-cpg").Gang(0).Obj(),
			want: "should be greater than or equal to 1"},
		{name: "composite without policy", cpg: func() *v1alpha1.CompositePodGroup {
			c := lt.MakeCompositePodGroup().Namespace(ns).Name("none-cpg").Obj()
			c.Spec.SchedulingPolicy.Basic = nil
			return c
		}(), want: "exactly one of basic or gang must be set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.pg != nil {
				_, err = env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Create(ctx, tc.pg, metav1.CreateOptions{})
			} else {
				_, err = env.Lockstep.SchedulingV1alpha1().CompositePodGroups(ns).Create(ctx, tc.cpg, metav1.CreateOptions{})
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Mode defaults to Required.
	got, err := env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "rack", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Spec.SchedulingConstraints.Topology[0].Mode; m != v1alpha1.TopologyRequired {
		t.Errorf("mode defaulted to %q, want Required", m)
	}
}

func TestUpdateValidation(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "api")
	ctx := context.Background()
	pgs := env.Lockstep.SchedulingV1alpha1().PodGroups(ns)
	base := lt.MakePodGroup().Namespace(ns).Name("g").Gang(4).Parent("parent").WorkloadRef("w", "t").Obj()
	if _, err := pgs.Create(ctx, base, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.PodGroup)
		want   string
	}{
		{name: "minCount is mutable", mutate: func(p *v1alpha1.PodGroup) { p.Spec.SchedulingPolicy.Gang.MinCount = 2 }},
		{name: "policy variant is immutable", mutate: func(p *v1alpha1.PodGroup) {
			p.Spec.SchedulingPolicy = v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}
		}, want: "the policy variant (basic or gang) is immutable"},
		{name: "parent is immutable", mutate: func(p *v1alpha1.PodGroup) { p.Spec.ParentCompositePodGroupName = ptr.To("other") }, want: "parentCompositePodGroupName is immutable"},
		{name: "parent cannot be removed", mutate: func(p *v1alpha1.PodGroup) { p.Spec.ParentCompositePodGroupName = nil }, want: "parentCompositePodGroupName is immutable"},
		{name: "workloadRef is immutable", mutate: func(p *v1alpha1.PodGroup) { p.Spec.WorkloadRef.TemplateName = "u" }, want: "workloadRef is immutable"},
		{name: "workloadRef cannot be removed", mutate: func(p *v1alpha1.PodGroup) { p.Spec.WorkloadRef = nil }, want: "workloadRef is immutable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := pgs.Get(ctx, "g", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(cur)
			_, err = pgs.Update(ctx, cur, metav1.UpdateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}

	// Status is a subresource: a spec update does not change it, UpdateStatus does.
	cur, err := pgs.Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonUnschedulable, Message: "x", LastTransitionTime: metav1.Now()}}
	if cur, err = pgs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(cur.Status.Conditions) != 0 {
		t.Error("spec update wrote status")
	}
	cur.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonUnschedulable, Message: "x", LastTransitionTime: metav1.Now()}}
	if cur, err = pgs.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil || len(cur.Status.Conditions) != 1 {
		t.Errorf("UpdateStatus: %v, conditions %v", err, cur.Status.Conditions)
	}
}

// kubectl get shows a gang's minimum (GANG; nothing for a basic group), the scheduled state
// and age — not the raw schedulingPolicy JSON.
func TestPrinterColumns(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "api")
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("g").Gang(4).Obj(), lt.MakePodGroup().Namespace(ns).Name("b").Basic().Obj())
	env.CreateComposites(t, lt.MakeCompositePodGroup().Namespace(ns).Name("c").Gang(2).Obj())
	for _, tc := range []struct {
		resource string
		want     []string
		gangs    map[string]any // the GANG cell by name; nil for a basic group
	}{
		{"podgroups", []string{"Name", "Gang", "Scheduled", "Reason", "Age"}, map[string]any{"g": 4, "b": nil}},
		{"compositepodgroups", []string{"Name", "Gang", "Scheduled", "Reason", "Age"}, map[string]any{"c": 2}},
	} {
		table := &metav1.Table{}
		err := env.Lockstep.SchedulingV1alpha1().RESTClient().Get().Namespace(ns).Resource(tc.resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Into(table)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				names = append(names, c.Name)
			}
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s columns %v, want %v", tc.resource, names, tc.want)
		}
		if len(table.Rows) != len(tc.gangs) {
			t.Fatalf("%s rows %d, want %d", tc.resource, len(table.Rows), len(tc.gangs))
		}
		for _, row := range table.Rows {
			t.Logf("%s: %v", tc.resource, row.Cells)
			name := toString(row.Cells[0])
			if want, ok := tc.gangs[name]; !ok || fmt.Sprint(row.Cells[1]) != fmt.Sprint(want) {
				t.Errorf("%s %s: GANG column %v, want %v", tc.resource, name, row.Cells[1], want)
			}
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func TestWorkloadValidation(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "api")
	ctx := context.Background()
	gang := v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}}
	tmpl := func(n int) []v1alpha1.PodGroupTemplate {
		out := make([]v1alpha1.PodGroupTemplate, n)
		for i := range out {
			out[i] = v1alpha1.PodGroupTemplate{Name: "t" + string(rune('a'+i)), SchedulingPolicy: gang}
		}
		return out
	}
	tests := []struct {
		name string
		spec v1alpha1.WorkloadSpec
		want string
	}{
		{name: "one template", spec: v1alpha1.WorkloadSpec{
			ControllerRef:     &v1alpha1.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: "train"},
			PodGroupTemplates: tmpl(1)}},
		{name: "nested templates", spec: v1alpha1.WorkloadSpec{CompositePodGroupTemplates: []v1alpha1.CompositePodGroupTemplate{{
			Name:              "job",
			SchedulingPolicy:  v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: 2}},
			PodGroupTemplates: tmpl(2),
		}}}},
		{name: "no templates", spec: v1alpha1.WorkloadSpec{}, want: "exactly one of podGroupTemplates or compositePodGroupTemplates must be set"},
		{name: "nine templates", spec: v1alpha1.WorkloadSpec{PodGroupTemplates: tmpl(9)}, want: "must have at most 8 items"},
		{name: "template with two policies", spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
			Name: "x", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: gang.Gang, Basic: &v1alpha1.BasicSchedulingPolicy{}},
		}}}, want: "exactly one of basic or gang must be set"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w" + string(rune('a'+i))}, Spec: tc.spec}
			_, err := env.Lockstep.SchedulingV1alpha1().Workloads(ns).Create(ctx, w, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
