package podgroup

import (
	"slices"
	"testing"
)

// What keeps the pods off the nodes they select comes first, the nodes their selector leaves
// out last, whatever their counts; then the most given first.
func TestDecidingFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reasons map[string]int
		want    []string
	}{
		{"selector alone", map[string]int{SelectorMismatch: 5}, []string{SelectorMismatch}},
		{"a taint on fewer nodes than the selector leaves out comes first",
			map[string]int{SelectorMismatch: 60, "node(s) had untolerated taint gpu=true:NoSchedule": 4},
			[]string{"node(s) had untolerated taint gpu=true:NoSchedule", SelectorMismatch}},
		{"the most given first, ties by name",
			map[string]int{"Insufficient cpu": 1, "gang g did not fit": 2, "node(s) were unschedulable": 2, SelectorMismatch: 9, "": 3},
			[]string{"gang g did not fit", "node(s) were unschedulable", "Insufficient cpu", SelectorMismatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecidingFirst(tc.reasons); !slices.Equal(got, tc.want) {
				t.Errorf("DecidingFirst = %q, want %q", got, tc.want)
			}
		})
	}
}
