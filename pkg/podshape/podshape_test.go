package podshape

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestKey(t *testing.T) {
	base := func(name string) *st.PodWrapper {
		return st.MakePod().Namespace("ns").Name(name).UID(name).Label("app", name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
	}
	tests := []struct {
		name       string
		a, b       *v1.Pod
		withLabels bool
		same       bool
	}{
		{name: "pods of one template share a shape", a: base("a").Obj(), b: base("b").Obj(), same: true},
		{name: "labels count where they matter", a: base("a").Obj(), b: base("b").Obj(), withLabels: true, same: false},
		{name: "requests differ", a: base("a").Obj(), b: base("b").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj(), same: false},
		{name: "node selectors differ", a: base("a").Obj(), b: base("b").NodeSelector(map[string]string{"rack": "r1"}).Obj(), same: false},
		{name: "namespaces differ", a: base("a").Obj(), b: base("b").Namespace("other").Obj(), same: false},
		{name: "a pod with claims is a shape of its own", a: base("a").PodResourceClaims(v1.PodResourceClaim{Name: "gpu"}).Obj(),
			b: base("b").PodResourceClaims(v1.PodResourceClaim{Name: "gpu"}).Obj(), same: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Key(tc.a, tc.withLabels) == Key(tc.b, tc.withLabels); got != tc.same {
				t.Errorf("same shape = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestInteracts(t *testing.T) {
	plain := st.MakePod().Name("p").Obj()
	tests := []struct {
		name                  string
		pod                   *v1.Pod
		interacting, monotone bool
	}{
		{name: "resources only", pod: plain, monotone: true},
		{name: "required anti-affinity only refuses", pod: st.MakePod().PodAntiAffinityExists("app", "kubernetes.io/hostname", st.PodAntiAffinityWithRequiredReq).Obj(), interacting: true, monotone: true},
		{name: "required affinity can also admit", pod: st.MakePod().PodAffinityExists("app", "kubernetes.io/hostname", st.PodAffinityWithRequiredReq).Obj(), interacting: true},
		{name: "spread constraints can also admit", pod: st.MakePod().SpreadConstraint(1, "rack", v1.DoNotSchedule, nil, nil, nil, nil, nil).Obj(), interacting: true},
		{name: "host ports", pod: st.MakePod().ContainerPort([]v1.ContainerPort{{HostPort: 80}}).Obj(), interacting: true, monotone: true},
		{name: "claims compete for devices", pod: st.MakePod().PodResourceClaims(v1.PodResourceClaim{Name: "gpu"}).Obj(), interacting: true, monotone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			interacting, monotone := Interacts([]*v1.Pod{plain, tc.pod})
			if interacting != tc.interacting || monotone != tc.monotone {
				t.Errorf("Interacts = (%v, %v), want (%v, %v)", interacting, monotone, tc.interacting, tc.monotone)
			}
		})
	}
}
