package jobframework

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Only a new generation or other annotations make an update worth filing pods again.
func TestSpecOrAnnotationsChanged(t *testing.T) {
	obj := func(generation int64, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGeneration(generation)
		u.SetAnnotations(annotations)
		return u
	}
	for _, tc := range []struct {
		name     string
		old, obj any
		want     bool
	}{
		{"status write", obj(3, map[string]string{"a": "1"}), obj(3, map[string]string{"a": "1"}), false},
		{"spec changed", obj(3, nil), obj(4, nil), true},
		{"annotation added", obj(3, nil), obj(3, map[string]string{"a": "1"}), true},
		{"annotation changed", obj(3, map[string]string{"a": "1"}), obj(3, map[string]string{"a": "2"}), true},
		{"not unstructured", "x", obj(3, nil), true},
	} {
		if got := SpecOrAnnotationsChanged(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
