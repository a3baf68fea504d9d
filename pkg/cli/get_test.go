package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	lsfake "github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// schedulerObjects are a scheduler's Deployment and the ConfigMap it mounts (named with a
// kustomize hash, as manifests/ makes it), with three topology levels.
func schedulerObjects() []runtime.Object {
	cfg := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: LockstepTopology
        args: {levels: [wrong]}
  - schedulerName: lockstep-scheduler
    pluginConfig:
      - name: LockstepGang
        args: {backoffSeconds: 1}
      - name: LockstepTopology
        args:
          levels: [topology.kubernetes.io/zone, topology.kubernetes.io/rack, kubernetes.io/hostname]
`
	return []runtime.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "lockstep-scheduler"},
			Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Volumes: []v1.Volume{
				{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: "lockstep-scheduler-config-7g2f9k8h5c"}}}},
			}}}},
		},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-system", Name: "lockstep-scheduler-config-7g2f9k8h5c"},
			Data: map[string]string{"scheduler-config.yaml": cfg}},
	}
}

// cluster is a Job's auto-created group (named with a hash) with a bound pod, and another
// group.
func cluster(withScheduler bool) (kubernetes.Interface, versioned.Interface) {
	objs := []runtime.Object{
		lt.ControlledBy(lt.GroupPod("demo", "finetune-0-abcde", "").Node("n1").Phase(v1.PodRunning), "batch/v1", "Job", "finetune", "job-uid").Obj(),
		lt.GroupPod("demo", "other-0", "other").Phase(v1.PodPending).Obj(),
		lt.InTopology(lt.MakeNode("n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj(),
	}
	if withScheduler {
		objs = append(objs, schedulerObjects()...)
	}
	return kubefake.NewClientset(objs...), lsfake.NewSimpleClientset(
		lt.MakePodGroup().Namespace("demo").Name(filing.JobGroupName("finetune", "job-uid")).Gang(1).Owner("batch/v1", "Job", "finetune", "job-uid").Obj(),
		lt.MakePodGroup().Namespace("demo").Name("other").Gang(1).Obj(),
	)
}

func get(t *testing.T, withScheduler bool, args ...string) (string, string, error) {
	t.Helper()
	return run(t, withScheduler, nil, "get", args...)
}

func TestGetFindsAGroupByItsWorkloadsName(t *testing.T) {
	job := filing.JobGroupName("finetune", "job-uid")
	for _, args := range [][]string{{"finetune"}, {"job/finetune"}, {"jobs.batch/finetune"}, {"pod/finetune-0-abcde"}, {"lspg/" + job}, {job}} {
		out, _, err := get(t, true, args...)
		if err != nil {
			t.Errorf("get %q: %v", args, err)
			continue
		}
		if !strings.Contains(out, "PodGroup demo/"+job+" (Job finetune)") || strings.Contains(out, "demo/other") {
			t.Errorf("get %q:\n%s\nwant the Job's tree alone", args, out)
		}
	}
}

func TestGetSaysWhatItDidNotFind(t *testing.T) {
	for args, want := range map[string]string{
		"job/missing":   "no gang tree holds job/missing in namespace demo",
		"jobset/other":  "no gang tree holds jobset/other",
		"deployment/x":  `unknown type "deployment"`,
		"job/":          "want NAME or TYPE/NAME",
		"--output=xml":  "--output must be one of",
		"pod/other-0/x": "want NAME or TYPE/NAME",
	} {
		_, _, err := get(t, true, args)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("get %s: %v, want an error saying %q", args, err, want)
		}
	}
}

// TestGetReadsTheSchedulersLevels: the pods' paths follow the levels of the running
// scheduler's profile (three levels, not the built-in four); without access to its
// configuration the built-in levels are used and the user is told.
func TestGetReadsTheSchedulersLevels(t *testing.T) {
	out, errOut, err := get(t, true, "finetune")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "finetune-0-abcde  z0 / z0-b0-r0 / n1") || errOut != "" {
		t.Errorf("with the scheduler's three levels:\n%s\nstderr %q", out, errOut)
	}
	out, errOut, err = get(t, false, "finetune")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "finetune-0-abcde  z0 / z0-b0 / z0-b0-r0 / n1") || !strings.Contains(errOut, "built-in default") {
		t.Errorf("without the scheduler's configuration:\n%s\nstderr %q", out, errOut)
	}
	out, _, err = get(t, false, "finetune", "--levels", "topology.kubernetes.io/zone")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "finetune-0-abcde  z0 / n1") {
		t.Errorf("with --levels zone:\n%s", out)
	}
}

func TestGetOutputs(t *testing.T) {
	for _, format := range []string{"yaml", "json"} {
		out, _, err := get(t, true, "job/finetune", "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Items      []struct {
				Name  string `json:"name"`
				Owner struct {
					Kind, Name string
				} `json:"owner"`
				Members []struct {
					Name string   `json:"name"`
					Path []string `json:"path"`
				} `json:"members"`
			} `json:"items"`
		}
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if list.Kind != listKind || len(list.Items) != 1 || list.Items[0].Owner.Name != "finetune" ||
			len(list.Items[0].Members) != 1 || len(list.Items[0].Members[0].Path) != 3 {
			t.Errorf("-o %s: %+v", format, list)
		}
	}
	out, _, err := get(t, true, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "other-0  pending  Pending, via label") || !strings.Contains(out, "Running, via job") ||
		!strings.HasPrefix(out, "Topology levels, broadest first (ConfigMap lockstep-system/lockstep-scheduler-config-7g2f9k8h5c (scheduler-config.yaml), profile lockstep-scheduler): topology.kubernetes.io/zone, topology.kubernetes.io/rack, kubernetes.io/hostname\n") {
		t.Errorf("-o wide:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer written by the command's goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGetWatch: --watch shows the trees, then again once a group is created and once a
// pod of it binds.
func TestGetWatch(t *testing.T) {
	kube, ls := cluster(true)
	out := &syncBuffer{}
	o := &getOptions{clusterOptions: clusterOptions{streams: genericiooptions.IOStreams{Out: out, ErrOut: out}}}
	o.clients = func() (kubernetes.Interface, versioned.Interface, string, error) { return kube, ls, "demo", nil }
	cmd := newGetCommand(o)
	cmd.SetArgs([]string{"--watch"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return ok(out.String()), nil
		})
		if err != nil {
			t.Fatalf("%s; output:\n%s", what, out.String())
		}
	}
	waitFor("the first view", func(s string) bool { return strings.Contains(s, "PodGroup demo/other") })
	if _, err := ls.SchedulingV1alpha1().PodGroups("demo").Create(ctx, lt.MakePodGroup().Namespace("demo").Name("late").Gang(1).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the new group shown", func(s string) bool { return strings.Count(s, "--- ") == 2 && strings.Contains(s, "PodGroup demo/late") })
	if _, err := kube.CoreV1().Pods("demo").Create(ctx, lt.GroupPod("demo", "late-0", "late").Node("n1").Phase(v1.PodRunning).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the new pod shown", func(s string) bool {
		return strings.Count(s, "--- ") == 3 && strings.Contains(s, "late-0  z0 / z0-b0-r0 / n1")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("--watch ended with %v", err)
	}
}
