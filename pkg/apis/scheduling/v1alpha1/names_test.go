package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// takenNames are the short names and categories the CRDs of the schedulers and queues that
// run next to lockstep already use. kubectl resolves a short name to whichever served
// resource claims it first: a name shared with one of them would make `kubectl get pg`
// return lockstep's groups on a cluster that runs scheduler-plugins, silently.
var takenNames = map[string]string{
	// scheduler-plugins (scheduling.x-k8s.io): PodGroup, ElasticQuota.
	"pg": "scheduler-plugins, Volcano, KAI", "pgs": "scheduler-plugins",
	"eq": "scheduler-plugins", "eqs": "scheduler-plugins",
	// Volcano (scheduling.volcano.sh, batch.volcano.sh, flow.volcano.sh, topology.volcano.sh).
	"podgroup-v1beta1": "Volcano", "q": "Volcano, KAI", "queue-v1beta1": "Volcano",
	"vcjob": "Volcano", "vj": "Volcano", "jf": "Volcano", "jt": "Volcano",
	"numatopo": "Volcano", "hn": "Volcano",
	// Kueue (kueue.x-k8s.io).
	"wl": "Kueue", "cq": "Kueue", "lq": "Kueue", "queue": "Kueue", "queues": "Kueue",
	"rf": "Kueue", "flavor": "Kueue", "flavors": "Kueue", "kueue": "Kueue",
	// Kubernetes' own: `kubectl get all` and the native Workload API's resources.
	"all": "Kubernetes", "workload": "Kubernetes", "workloads": "Kubernetes",
	"podgroup": "Kubernetes", "podgroups": "Kubernetes",
}

// TestNamesDoNotCollide checks every CRD lockstep ships against the names other schedulers
// and queues take (test/integration/coscheduling checks the same with the real
// scheduler-plugins CRD served next to lockstep's).
func TestNamesDoNotCollide(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "manifests", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in manifests/crds: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names := crd.Spec.Names
		if len(names.ShortNames) == 0 {
			t.Errorf("%s: no short name", crd.Name)
		}
		for _, n := range append(append([]string{}, names.ShortNames...), names.Categories...) {
			if owner, ok := takenNames[n]; ok {
				t.Errorf("%s takes %q, which %s already uses", crd.Name, n, owner)
			}
		}
	}
}
