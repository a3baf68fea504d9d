package v1alpha1

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeTopologyPath(t *testing.T) {
	levels := []string{"zone", "block", "rack", "host"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"every level", map[string]string{"zone": "z", "block": "b", "rack": "r", "host": "h"}, []string{"z", "b", "r", "h"}},
		{"no block or rack", map[string]string{"zone": "z", "host": "h"}, []string{"z", "", "", "h"}},
		{"missing levels at the end left out", map[string]string{"zone": "z", "block": "b"}, []string{"z", "b"}},
		{"an empty value is no value", map[string]string{"zone": "z", "rack": "", "host": "h"}, []string{"z", "", "", "h"}},
		{"other labels ignored", map[string]string{"other": "x"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
			if got := NodeTopologyPath(n, levels); !slices.Equal(got, tc.want) {
				t.Errorf("NodeTopologyPath = %q, want %q", got, tc.want)
			}
		})
	}
}
