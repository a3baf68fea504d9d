package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/hack/demo/cluster"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// checkDocsResources resolves every resource name a `kubectl get` or `kubectl describe` of
// the docs uses (docFiles) against the demo cluster's API, which serves lockstep's kinds,
// the native scheduling.k8s.io ones and Kueue's, JobSet's, LeaderWorkerSet's and KubeRay's:
// each must name exactly one resource (or be a category). A name that resolves to none is a
// typo or a kind the docs should not promise; one that matches resources of several groups
// (workloads: lockstep's, the native and Kueue's) is one kubectl resolves silently to one of
// them, maybe not the one the docs mean. demoOutput is what make demo printed: the kubectl
// commands it suggests are checked too.
func checkDocsResources(t *testing.T, c *cluster.Cluster, demoOutput string) {
	t.Helper()
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := kube.Discovery().ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discovery: %v", err)
	} else if err != nil {
		t.Logf("discovery (partial): %v", err)
	}
	uses, err := docsKubectlResources(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) < 10 {
		t.Fatalf("found %d resource names in the docs' kubectl commands: %v", len(uses), uses)
	}
	printed := kubectlResources(demoOutput, false)
	if len(printed) == 0 {
		t.Errorf("make demo printed no kubectl get command:\n%s", demoOutput)
	}
	for _, u := range printed {
		u.File = "make demo's output"
		uses = append(uses, u)
	}
	for _, u := range uses {
		r := resolveResource(u.Resource, lists)
		switch {
		case len(r.Resources) == 0:
			t.Errorf("%s:%d: %q (in `%s`) names no resource the demo serves", u.File, u.Line, u.Resource, u.Command)
		case !r.Category && len(r.Resources) > 1:
			t.Errorf("%s:%d: %q (in `%s`) is ambiguous: it names %v; name one in full (resource.group)", u.File, u.Line, u.Resource, u.Command, r.Resources)
		default:
			t.Logf("%s:%d: %q resolves to %v", u.File, u.Line, u.Resource, r.Resources)
		}
	}
}

// docFiles are the files whose kubectl commands a reader runs: README.md, docs/ (Markdown),
// the chart's NOTES.txt and the alerts' descriptions.
func docFiles(root string) ([]string, error) {
	files := []string{"README.md", "charts/lockstep/templates/NOTES.txt", "manifests/monitoring/alerts.yaml"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, rel)
		return err
	})
	return files, err
}

// docsKubectlResources returns the resource names of every kubectl get and describe of the
// docs (docFiles).
func docsKubectlResources(root string) ([]kubectlUse, error) {
	files, err := docFiles(root)
	if err != nil {
		return nil, err
	}
	var out []kubectlUse
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, u := range kubectlResources(string(data), strings.HasSuffix(f, ".md")) {
			u.File = f
			out = append(out, u)
		}
	}
	return out, nil
}

// kubectlUse is a resource name a kubectl get or describe of a document uses.
type kubectlUse struct {
	File    string
	Line    int
	Command string // the command, as written
	// Resource is one resource name of it: pods, lspg, deploy, workloads.kueue.x-k8s.io,
	// lockstep (a category).
	Resource string
}

// snippet is code a reader may run, with the line it starts on.
type snippet struct {
	line int
	text string
}

// codeSnippets returns a document's code: in Markdown, each line of its fenced blocks and
// each inline code span (one may wrap lines; a paragraph break ends it); in other text, its
// inline code spans and the lines that start with kubectl.
func codeSnippets(text string, markdown bool) []snippet {
	lines := strings.Split(text, "\n")
	var out []snippet
	prose := make([]string, len(lines)) // the lines outside fenced blocks; blank inside them
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case markdown && fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence != "":
			out = append(out, snippet{i + 1, l})
		default:
			prose[i] = l
			if !markdown && strings.HasPrefix(trimmed, "kubectl ") {
				out = append(out, snippet{i + 1, l})
			}
		}
	}
	joined := strings.Join(prose, "\n")
	for i := 0; i < len(joined); {
		if joined[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(joined) && joined[i+n] == '`' {
			n++
		}
		delim := joined[i : i+n]
		end := -1
		for j := i + n; j < len(joined); {
			k := strings.Index(joined[j:], delim)
			if k < 0 {
				break
			}
			k += j
			m := 0
			for k+m < len(joined) && joined[k+m] == '`' {
				m++
			}
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 || strings.Contains(joined[i+n:end], "\n\n") {
			i += n // no closing run in the paragraph: literal backticks
			continue
		}
		code := strings.Join(strings.Fields(joined[i+n:end]), " ")
		out = append(out, snippet{strings.Count(joined[:i], "\n") + 1, code})
		i = end + n
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].line < out[b].line })
	return out
}

// kubectlCommand finds a kubectl command in code, up to the end of the shell command (a pipe,
// a list, a comment, a substitution's end).
var kubectlCommand = regexp.MustCompile("(^|[\\s($`])kubectl\\s[^|;&#)`]*")

// valueFlags are kubectl's flags (global, get's and describe's) that take the next argument
// as their value unless written flag=value.
var valueFlags = sets.New("-n", "--namespace", "--kubeconfig", "--context", "--cluster", "--user", "-s", "--server",
	"--token", "--as", "--as-group", "--cache-dir", "--request-timeout", "-l", "--selector", "-o", "--output",
	"-L", "--label-columns", "-f", "--filename", "-k", "--kustomize", "--field-selector", "--sort-by",
	"--template", "--chunk-size", "--subresource", "--raw")

// resourceName is how a resource name (or a category) is spelt: kubectl's placeholders
// (NAME, TYPE) and prose are not.
var resourceName = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*$`)

// kubectlResources returns the resource names the kubectl get and describe commands of a
// document's code use (codeSnippets): the first argument of each, split at commas, or the
// TYPE of each TYPE/NAME argument.
func kubectlResources(text string, markdown bool) []kubectlUse {
	var out []kubectlUse
	for _, s := range codeSnippets(text, markdown) {
		for _, m := range kubectlCommand.FindAllStringSubmatchIndex(s.text, -1) {
			command := strings.TrimSpace(s.text[m[0]+len(s.text[m[2]:m[3]]) : m[1]])
			args := strings.Fields(command)[1:]
			verb, rest := "", []string(nil)
			for i := 0; i < len(args); i++ {
				a := args[i]
				if strings.HasPrefix(a, "-") {
					if valueFlags.Has(a) {
						i++
					}
					continue
				}
				verb, rest = a, args[i+1:]
				break
			}
			if verb != "get" && verb != "describe" {
				continue
			}
			var positional []string
			for i := 0; i < len(rest); i++ {
				a := rest[i]
				if strings.HasPrefix(a, "-") {
					if valueFlags.Has(a) {
						i++
					}
					continue
				}
				positional = append(positional, a)
			}
			if len(positional) == 0 {
				continue
			}
			var names []string
			if strings.Contains(positional[0], "/") {
				for _, p := range positional {
					if typ, _, ok := strings.Cut(p, "/"); ok {
						names = append(names, typ)
					}
				}
			} else {
				names = strings.Split(positional[0], ",")
			}
			for _, n := range names {
				if resourceName.MatchString(n) {
					out = append(out, kubectlUse{Line: s.line, Command: command, Resource: n})
				}
			}
		}
	}
	return out
}

// resolution is what a resource name resolves to in an API's discovery.
type resolution struct {
	// Resources are the resources it names, as resource.group ("pods" for the core group),
	// whatever their versions.
	Resources []string
	// Category: it is a category (lockstep, all), which kubectl expands to Resources.
	Category bool
}

// resolveResource resolves a resource name as kubectl does (a category first, then
// resource.group or resource.version.group, then a bare plural, singular or short name),
// except that it returns every resource a bare name matches instead of kubectl's silent
// pick.
func resolveResource(name string, lists []*metav1.APIResourceList) resolution {
	type resource struct {
		group, version string
		r              metav1.APIResource
	}
	var all []resource
	for _, l := range lists {
		if l == nil {
			continue
		}
		group, version := "", l.GroupVersion
		if g, v, ok := strings.Cut(l.GroupVersion, "/"); ok {
			group, version = g, v
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				all = append(all, resource{group, version, r})
			}
		}
	}
	full := func(r resource) string {
		if r.group == "" {
			return r.r.Name
		}
		return r.r.Name + "." + r.group
	}
	names := func(r resource) []string {
		singular := r.r.SingularName
		if singular == "" {
			singular = strings.ToLower(r.r.Kind)
		}
		return append([]string{r.r.Name, singular}, r.r.ShortNames...)
	}
	found := sets.New[string]()
	for _, r := range all {
		if slices.Contains(r.r.Categories, name) {
			found.Insert(full(r))
		}
	}
	if found.Len() > 0 {
		return resolution{Resources: sets.List(found), Category: true}
	}
	for _, r := range all {
		if !slices.Contains(names(r), name) {
			if res, rest, ok := strings.Cut(name, "."); !ok || !slices.Contains(names(r), res) ||
				(rest != r.group && rest != r.version+"."+r.group) {
				continue
			}
		}
		found.Insert(full(r))
	}
	return resolution{Resources: sets.List(found)}
}

// TestKubectlResources: the resource names of kubectl get and describe commands are found
// in fenced blocks and inline code (wrapped across lines too), past flags before and after
// the verb, in TYPE/NAME arguments and comma-separated lists; other verbs, kubectl
// plugins, placeholders and prose are not taken for resource names.
func TestKubectlResources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		text     string
		markdown bool
		want     []string // line:resource
	}{
		{
			name:     "fenced block",
			text:     "Run:\n\n```sh\nkubectl get lspg                   # lockstep's PodGroups\nkubectl lockstep get job/finetune  # the plugin\nkubectl apply -f x.yaml\n```\n",
			markdown: true,
			want:     []string{"4:lspg"},
		},
		{
			name:     "inline code, wrapped",
			text:     "its Workload says why (`kubectl get\nworkloads.kueue.x-k8s.io -n demo`), until quota frees.",
			markdown: true,
			want:     []string{"1:workloads.kueue.x-k8s.io"},
		},
		{
			name:     "flags before the verb, and a name",
			text:     "a replica leads: `kubectl -n lockstep-system get lease lockstep-scheduler`, and",
			markdown: true,
			want:     []string{"1:lease"},
		},
		{
			name:     "flags with values before the resource",
			text:     "`kubectl get -n demo -o wide --selector app=x pods`",
			markdown: true,
			want:     []string{"1:pods"},
		},
		{
			name:     "lists, TYPE/NAME and placeholders",
			text:     "`kubectl get lockstep,jobsets -A` and `kubectl describe pod/a job/b` and `kubectl describe job NAME` and `kubectl get TYPE`",
			markdown: true,
			want:     []string{"1:lockstep", "1:jobsets", "1:pod", "1:job", "1:job"},
		},
		{
			name:     "pipes end the command, logs are no get",
			text:     "```\nkubectl get pods -A | grep kubectl\nkubectl -n x logs deploy/y | grep z\necho $(kubectl get nodes -o name)\n```",
			markdown: true,
			want:     []string{"2:pods", "4:nodes"},
		},
		{
			name:     "backticks inside a fenced block are no inline code",
			text:     "```yaml\ndescription: `kubectl get widgets`\n```\nthen `kubectl get gadgets`",
			markdown: true,
			want:     []string{"2:widgets", "4:gadgets"},
		},
		{
			name:     "an unclosed backtick is literal",
			text:     "a ` alone\n\nthen `kubectl describe nodes` here",
			markdown: true,
			want:     []string{"3:nodes"},
		},
		{
			name:     "text: command lines and inline code",
			text:     "See the gangs:\n  kubectl get lockstep -A\nrun kubectl get nodes, in prose, is not code\n  description: The gang runs short. `kubectl get lspg -A` shows it.",
			markdown: false,
			want:     []string{"2:lockstep", "4:lspg"},
		},
		{
			name:     "no resource",
			text:     "`kubectl get` alone, `kubectl describe -A`, and `kubectl lockstep explain whale`",
			markdown: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, u := range kubectlResources(tc.text, tc.markdown) {
				got = append(got, fmt.Sprintf("%d:%s", u.Line, u.Resource))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResolveResource: a resource name resolves, as kubectl resolves it, to a category's
// resources, or to the one resource its full name, plural, singular or short name names; a
// bare name that several groups serve resolves to all of them, and a name none serves to
// none.
func TestResolveResource(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", ShortNames: []string{"po"}, Categories: []string{"all"}},
			{Name: "pods/log", Kind: "Pod"},
			{Name: "nodes", Kind: "Node", ShortNames: []string{"no"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Categories: []string{"all"}},
		}},
		{GroupVersion: "scheduling.lockstep.dev/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "podgroups", SingularName: "podgroup", Kind: "PodGroup", ShortNames: []string{"lspg", "lspgs"}, Categories: []string{"lockstep"}},
			{Name: "workloads", SingularName: "workload", Kind: "Workload", ShortNames: []string{"lswl"}, Categories: []string{"lockstep"}},
		}},
		{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "podgroups", SingularName: "podgroup", Kind: "PodGroup"},
			{Name: "workloads", SingularName: "workload", Kind: "Workload"},
		}},
		{GroupVersion: "scheduling.k8s.io/v1alpha3", APIResources: []metav1.APIResource{
			{Name: "workloads", SingularName: "workload", Kind: "Workload"},
		}},
		{GroupVersion: "kueue.x-k8s.io/v1beta2", APIResources: []metav1.APIResource{
			{Name: "workloads", SingularName: "workload", Kind: "Workload", ShortNames: []string{"wl"}},
		}},
	}
	for _, tc := range []struct {
		name     string
		want     []string
		category bool
	}{
		{"pods", []string{"pods"}, false},
		{"pod", []string{"pods"}, false},
		{"po", []string{"pods"}, false},
		{"nodes", []string{"nodes"}, false},
		{"node", []string{"nodes"}, false}, // no singularName: the kind's
		{"deploy", []string{"deployments.apps"}, false},
		{"deployments.apps", []string{"deployments.apps"}, false},
		{"deployments.v1.apps", []string{"deployments.apps"}, false},
		{"lspg", []string{"podgroups.scheduling.lockstep.dev"}, false},
		{"podgroups.scheduling.lockstep.dev", []string{"podgroups.scheduling.lockstep.dev"}, false},
		{"podgroups", []string{"podgroups.scheduling.k8s.io", "podgroups.scheduling.lockstep.dev"}, false},
		{"workloads", []string{"workloads.kueue.x-k8s.io", "workloads.scheduling.k8s.io", "workloads.scheduling.lockstep.dev"}, false},
		{"workload", []string{"workloads.kueue.x-k8s.io", "workloads.scheduling.k8s.io", "workloads.scheduling.lockstep.dev"}, false},
		{"workloads.kueue.x-k8s.io", []string{"workloads.kueue.x-k8s.io"}, false},
		{"workloads.scheduling.k8s.io", []string{"workloads.scheduling.k8s.io"}, false},
		{"wl", []string{"workloads.kueue.x-k8s.io"}, false},
		{"lockstep", []string{"podgroups.scheduling.lockstep.dev", "workloads.scheduling.lockstep.dev"}, true},
		{"all", []string{"deployments.apps", "pods"}, true},
		{"widgets", nil, false},
		{"pods.apps", nil, false},
		{"log", nil, false},
	} {
		got := resolveResource(tc.name, lists)
		if !slices.Equal(got.Resources, tc.want) || got.Category != tc.category {
			t.Errorf("resolveResource(%q) = %+v, want %v (category %v)", tc.name, got, tc.want, tc.category)
		}
	}
}

// TestDocsKubectlCommands: the docs' kubectl get and describe commands are found (the demo
// test resolves them, checkDocsResources), and none uses a name that is ambiguous on a
// cluster serving lockstep's, the native scheduling.k8s.io and Kueue's kinds.
func TestDocsKubectlCommands(t *testing.T) {
	uses, err := docsKubectlResources(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	found := sets.New[string]()
	for _, u := range uses {
		t.Logf("%s:%d: %q in `%s`", u.File, u.Line, u.Resource, u.Command)
		found.Insert(u.Resource)
		for _, bare := range []string{"workload", "workloads", "podgroup", "podgroups", "compositepodgroup", "compositepodgroups"} {
			if u.Resource == bare {
				t.Errorf("%s:%d: `%s` names %q, which lockstep's, the native and (for workloads) Kueue's kinds share; name it in full", u.File, u.Line, u.Command, bare)
			}
		}
	}
	for _, want := range []string{"lspg", "lockstep", "pods", "workloads.kueue.x-k8s.io", "lease", "job"} {
		if !found.Has(want) {
			t.Errorf("no kubectl command of the docs uses %q; found %v", want, sets.List(found))
		}
	}
}

// TestDocsSayWhichPodsWaitForAMissingGroup: docs/troubleshooting.md's table of the pods whose
// group does not exist says, row by row, what the scheduler's filing (filing.Book) does with
// them once jobGroupTimeoutSeconds is over: those it says wait, however long, are still
// filed under their group (held, never bound alone); those it says are scheduled without a
// gang belong to none. Before the timeout every one of them waits. So does its paragraph on
// the workload controller being off.
func TestDocsSayWhichPodsWaitForAMissingGroup(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	row := func(start string) string {
		t.Helper()
		for _, l := range strings.Split(doc, "\n") {
			if strings.HasPrefix(l, start) {
				return l
			}
		}
		t.Fatalf("docs/troubleshooting.md has no row starting %q", start)
		return ""
	}
	const timeout = 2 * time.Minute
	created := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{SchedulerName: "lockstep-scheduler"}},
		},
	}
	jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := jobs.Add(job); err != nil {
		t.Fatal(err)
	}
	pod := func(labels map[string]string, owner *batchv1.Job) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid", Labels: labels, CreationTimestamp: metav1.NewTime(created)},
			Spec:       v1.PodSpec{SchedulerName: "lockstep-scheduler"},
		}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, batchv1.SchemeGroupVersion.WithKind("Job"))}
		}
		return p
	}
	ownLabel := map[string]string{v1alpha1.PodGroupLabel: "train"}
	pluginsLabel := map[string]string{filing.SchedulerPluginsPodGroupLabel: "mpi"}
	for _, tc := range []struct {
		row, says  string // the row of the table, and what it says is done after the timeout
		pod        *v1.Pod
		workloads  filing.Workloads // nil: Jobs' gangs, their PodGroups created by the workload controller
		waitsAfter bool
	}{
		{"| Its label `scheduling.lockstep.dev/pod-group` names a PodGroup |", "It waits, however long", pod(ownLabel, nil), nil, true},
		{"| Its Job gets a group from lockstep's workload controller", "**Then it is scheduled without a gang**", pod(nil, job), nil, false},
		{"| Its label `scheduling.x-k8s.io/pod-group` names a scheduler-plugins PodGroup the scheduler has not seen", "**Then it is scheduled without a gang**",
			pod(pluginsLabel, nil), labelledWorkloads{created: true}, false},
		{"| The same, with the object seen", "It waits, however long", pod(pluginsLabel, nil), labelledWorkloads{seen: true, created: true}, true},
		// The launcher of an MPI job: a Job's pod, filed by its label.
		{"| The same, with the object seen", "not scheduled alone", pod(pluginsLabel, job), labelledWorkloads{seen: true, created: true}, true},
	} {
		if r := row(tc.row); !strings.Contains(r, tc.says) {
			t.Errorf("docs/troubleshooting.md's row %q does not say %q", tc.row, tc.says)
		}
		checkFiling(t, tc.row, tc.pod, tc.workloads, jobs, created, timeout, true, tc.waitsAfter)
	}

	// The workload controller off.
	prose := strings.Join(strings.Fields(doc), " ")
	for _, says := range []string{
		"a Job's pods, and labelled pods whose object is seen, are scheduled without a gang at once",
		"a labelled pod whose object is not seen still waits for it `jobGroupTimeoutSeconds` first",
	} {
		if !strings.Contains(prose, says) {
			t.Errorf("docs/troubleshooting.md does not say %q", says)
		}
	}
	checkFiling(t, "a Job's pod, no controller", pod(nil, job), filing.JobGangs{Created: false}, jobs, created, timeout, false, false)
	checkFiling(t, "a labelled pod, object seen, no controller", pod(pluginsLabel, nil), labelledWorkloads{seen: true}, jobs, created, timeout, false, false)
	checkFiling(t, "a labelled pod, object not seen, no controller", pod(pluginsLabel, nil), labelledWorkloads{}, jobs, created, timeout, true, false)
}

// checkFiling files pod (created at created) before its group's timeout and after it, and
// checks that it belongs to a group (waits for it) then as want.
func checkFiling(t *testing.T, what string, pod *v1.Pod, workloads filing.Workloads, jobs cache.Indexer, created time.Time, timeout time.Duration, waitsBefore, waitsAfter bool) {
	t.Helper()
	book := filing.NewBook(workloads)
	book.SetJobs(batchlisters.NewJobLister(jobs))
	book.Remember(pod)
	missing := func(string) bool { return false }
	for _, at := range []struct {
		when  time.Time
		waits bool
	}{{created.Add(time.Second), waitsBefore}, {created.Add(timeout + time.Second), waitsAfter}} {
		name, ok := book.File(pod, docProfiles{timeout}, at.when, missing)
		if ok != at.waits || (ok && name == "") {
			t.Errorf("%s, %s after its creation: filed under %q (%v), want waiting for its group %v", what, at.when.Sub(created), name, ok, at.waits)
		}
	}
}

// docProfiles is lockstep-scheduler's profile, with a jobGroupTimeout.
type docProfiles struct{ timeout time.Duration }

func (docProfiles) Names() sets.Set[string]             { return sets.New("lockstep-scheduler") }
func (p docProfiles) GroupTimeout(string) time.Duration { return p.timeout }

// labelledWorkloads files pods as the workload controller's scheduler-plugins adapter
// (pkg/controller/jobs/coscheduling, through jobframework.Filer) does: a pod labelled
// scheduling.x-k8s.io/pod-group belongs to the mirror of that PodGroup, which the controller
// creates when it runs (created), Unseen while the PodGroup is not seen.
type labelledWorkloads struct{ seen, created bool }

func (labelledWorkloads) GroupOfJob(*batchv1.Job, sets.Set[string]) (string, bool) { return "", false }

func (w labelledWorkloads) GroupOfPod(pod *v1.Pod, _ *batchv1.Job, _ sets.Set[string]) filing.Filing {
	name := pod.Labels[filing.SchedulerPluginsPodGroupLabel]
	if name == "" {
		return filing.Filing{}
	}
	return filing.Filing{Name: name, Created: w.created, Labelled: true, Unseen: !w.seen}
}

func (labelledWorkloads) Labelled(pod *v1.Pod) (string, bool) {
	name := pod.Labels[filing.SchedulerPluginsPodGroupLabel]
	return pod.Namespace + "/" + name, name != ""
}
