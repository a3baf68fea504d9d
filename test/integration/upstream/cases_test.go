package upstream

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// upstreamFile is one file of upstream's tests and, for each of its test functions, the cases
// run here (a function without a table of cases is one case, named by the function).
type upstreamFile struct {
	path   string // under test/integration/scheduler
	suites map[string]func() suite
	// only keeps, of a table, the entries that set this field to true ("" keeps them all).
	only string
}

// upstreamFiles are every file of upstream's tests with workload-scheduling cases.
var upstreamFiles = []upstreamFile{
	{path: "podgroup/podgroup_test.go", suites: map[string]func() suite{
		"TestPodGroupScheduling":                casesPodGroupScheduling,
		"TestWorkloadAwarePreemptionInvocation": casesWorkloadAwarePreemptionInvocation,
	}},
	{path: "podgroup/cpg_test.go", suites: map[string]func() suite{
		"TestCPGScheduling":                       casesCPGScheduling,
		"TestPodGroupDependentRequiredValidation": casesPodGroupDependentRequiredValidation,
	}},
	{path: "podgroup/queueing_test.go", suites: map[string]func() suite{"TestCPGQueueing": casesCPGQueueing}},
	{path: "podgroup/podgroup_affinity_test.go", suites: map[string]func() suite{
		"TestPodGroupSchedulingWithPodAntiAffinity": casesPodGroupSchedulingWithPodAntiAffinity,
	}},
	{path: "podgroup/podgroup_pvc_test.go", suites: map[string]func() suite{
		"TestPodGroupSchedulingWithReadWriteOncePodPVC": casesPodGroupSchedulingWithReadWriteOncePodPVC,
	}},
	{path: "podgroup/queueing/queueing_test.go", suites: map[string]func() suite{"TestPodGroupQueueing": casesPodGroupQueueing}},
	{path: "podgroup/topology_aware_scheduling/tas_test.go", suites: map[string]func() suite{
		"TestTopologyAwareSchedulingWithGangPolicy":  casesTopologyAwareSchedulingWithGangPolicy,
		"TestTopologyAwareSchedulingWithBasicPolicy": casesTopologyAwareSchedulingWithBasicPolicy,
	}},
	{path: "podgroup/topology_aware_scheduling/cpg_tas_test.go", suites: map[string]func() suite{
		"TestCPGTopologyAwareScheduling":                        casesCPGTopologyAwareScheduling,
		"TestCPGTopologyAwareSchedulingWorkloadAwarePreemption": casesCPGTopologyAwareSchedulingWorkloadAwarePreemption,
	}},
	{path: "preemption/podgroup/podgrouppreemption_test.go", suites: map[string]func() suite{
		"TestPodGroupPreemption":                            casesPodGroupPreemption,
		"TestPodGroupPreemptionStatus":                      casesPodGroupPreemptionStatus,
		"TestPodGroupPreemption_NominatedNodeNameRespected": casesPodGroupPreemption_NominatedNodeNameRespected,
		"TestCompositePodGroupPreemption":                   casesCompositePodGroupPreemption,
	}},
	{path: "preemption/preemption_test.go", only: "genericWorkloadEnabled", suites: map[string]func() suite{
		"TestPreemption": casesPreemptionPodGroupVictims,
	}},
}

// upstreamCase names one case of upstream's: file, test function, entry.
type upstreamCase struct{ file, fn, name string }

func (c upstreamCase) String() string { return c.file + ": " + c.fn + "/" + c.name }

// upstreamDir is upstream's test/integration/scheduler in the module cache.
func upstreamDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes in the module cache: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler")
}

// listUpstream returns the cases of one of upstream's files, as its tests name them: the
// entries of each test function's table (the composite literal assigned to tests), or the
// function itself where it has none.
func listUpstream(t *testing.T, dir string, f upstreamFile) []upstreamCase {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, f.path))
	if err != nil {
		t.Fatal(err)
	}
	file, err := parser.ParseFile(token.NewFileSet(), f.path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []upstreamCase
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
			continue
		}
		if f.only != "" && fn.Name.Name != "TestPreemption" {
			continue
		}
		var table *ast.CompositeLit
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || table != nil || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			if id, ok := as.Lhs[0].(*ast.Ident); ok && id.Name == "tests" {
				table, _ = as.Rhs[0].(*ast.CompositeLit)
			}
			return true
		})
		if table == nil {
			out = append(out, upstreamCase{f.path, fn.Name.Name, fn.Name.Name})
			continue
		}
		for _, elt := range table.Elts {
			entry, ok := elt.(*ast.CompositeLit)
			if !ok {
				t.Fatalf("%s: %s: an entry of its table is not a composite literal", f.path, fn.Name.Name)
			}
			name, keep := "", f.only == ""
			for _, kv := range entry.Elts {
				kv, ok := kv.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				switch {
				case key == nil:
				case key.Name == "name":
					lit, ok := kv.Value.(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: %s: an entry's name is not a string literal", f.path, fn.Name.Name)
					}
					if name, err = strconv.Unquote(lit.Value); err != nil {
						t.Fatal(err)
					}
				case key.Name == f.only:
					v, _ := kv.Value.(*ast.Ident)
					keep = v != nil && v.Name == "true"
				}
			}
			if name == "" {
				t.Fatalf("%s: %s: an entry without a name", f.path, fn.Name.Name)
			}
			if keep {
				out = append(out, upstreamCase{f.path, fn.Name.Name, name})
			}
		}
	}
	return out
}

// TestEveryUpstreamCaseHasAnEntry lists upstream's cases from its files in the module cache
// and checks that each is run here (a case of the suite of its test function, under its
// exact name) or is listed as not run with the reason, and that nothing here names a case
// upstream does not have.
func TestEveryUpstreamCaseHasAnEntry(t *testing.T) {
	dir := upstreamDir(t)
	entries := map[upstreamCase]string{} // -> "run", "differs" or "not run"
	for _, f := range upstreamFiles {
		for fn, cases := range f.suites {
			for _, c := range cases().cases {
				key := upstreamCase{f.path, fn, c.name}
				if _, dup := entries[key]; dup {
					t.Errorf("%s: run twice", key)
				}
				entries[key] = "run"
			}
		}
	}
	for key, why := range notRun {
		if _, dup := entries[key]; dup {
			t.Errorf("%s: both run and listed as not run", key)
		}
		if why == "" {
			t.Errorf("%s: not run, without a reason", key)
		}
		entries[key] = "not run"
	}
	var missing []string
	upstream := map[upstreamCase]bool{}
	for _, f := range upstreamFiles {
		cases := listUpstream(t, dir, f)
		if len(cases) == 0 {
			t.Errorf("%s: no cases found: the file changed shape", f.path)
		}
		for _, c := range cases {
			upstream[c] = true
			if _, ok := entries[c]; !ok {
				missing = append(missing, c.String())
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("upstream's case has no entry: %s", m)
	}
	for key := range entries {
		if !upstream[key] {
			t.Errorf("%s: not a case of upstream's", key)
		}
	}
}

// notRun are upstream's cases that cannot run against a separate scheduler binary, and why.
var notRun = map[upstreamCase]string{
	{"podgroup/podgroup_test.go", "TestPostFilterNotCalled", "TestPostFilterNotCalled"}: "it counts the calls of a mock PostFilter plugin added to the " +
		"scheduler's profile; lockstep's binary takes no test plugins, and its profile decides a member's preemption once for its gang (LockstepTopology's PostFilter)",
	{"podgroup/podgroup_test.go", "TestPodGroupPostFilterIteration", "TestPodGroupPostFilterIteration"}: "it counts the calls of mock plugins at upstream's " +
		"PodGroupPostFilter extension point, which lockstep's profile does not use; lockstep's binary takes no test plugins",
	{queueingFile, "TestPodGroupQueueing", "Gang scheduling pod group member pod added mid-cycle is correctly buffered and retried after schedulable attempt"}:                                                                           midCycle,
	{queueingFile, "TestPodGroupQueueing", "Gang scheduling pod group member pod added mid-cycle is correctly buffered and retried after unschedulable attempt"}:                                                                         midCycle,
	{queueingFile, "TestPodGroupQueueing", "Basic policy pod group member pod added mid-cycle is correctly buffered and retried after schedulable attempt"}:                                                                              midCycle,
	{queueingFile, "TestPodGroupQueueing", "Basic policy pod group member pod added mid-cycle is correctly buffered and retried after unschedulable attempt"}:                                                                            midCycle,
	{queueingFile, "TestPodGroupQueueing", "Gang scheduling pod group member pod fails PreBind, is correctly retried and scheduled"}:                                                                                                     failsPreBind,
	{queueingFile, "TestPodGroupQueueing", "Gang scheduling pod group member pod fails PreBind while other is unschedulable, is correctly retried and scheduled"}:                                                                        failsPreBind,
	{queueingFile, "TestPodGroupQueueing", "Basic policy pod group member pod fails PreBind, is correctly retried and scheduled"}:                                                                                                        failsPreBind,
	{queueingFile, "TestPodGroupQueueing", "Basic policy pod group member pod fails PreBind while other is unschedulable, is correctly retried and scheduled"}:                                                                           failsPreBind,
	{queueingFile, "TestPodGroupQueueing", "Single member gang pod group fails PreBind, is correctly retried and scheduled"}:                                                                                                             failsPreBind,
	{queueingFile, "TestPodGroupQueueing", "Single member basic policy pod group fails PreBind, is correctly retried and scheduled"}:                                                                                                     failsPreBind,
	{queueingFile, "TestPodGroupSequentialQueueing", "Gang scheduling pod group fails scheduling and retries without any cluster change"}:                                                                                                singleCycles,
	{queueingFile, "TestPodGroupSequentialQueueing", "Basic policy pod group partially fails scheduling and retries without any cluster change"}:                                                                                         singleCycles,
	{queueingFile, "TestPodGroupRequeueRemainingOnSchedulingSuccess", "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, the next scheduling attempt prioritizes the higher priority pod"}:             singleCycles,
	{queueingFile, "TestPodGroupRequeueRemainingOnSchedulingSuccess", "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, the next scheduling attempt prioritizes the old pod if priorities are equal"}: singleCycles,
	{queueingFile, "TestPodGroupRequeueRemainingOnSchedulingSuccess", "After successfully scheduling a podgroup with a new pending pod added mid-cycle, an older individual pod in queue is prioritized if priorities are equal"}:        singleCycles,
	{preemptionFile, "TestPodGroupPreemption", "Partial Preemption with basic policy"}: "the victim is chosen by upstream's preset mockScorePlugin (node1 scores 100, node2 0): " +
		"without it the lower-priority very-low-1 on node2 is the natural victim, and the case expects low-1 on node1 preempted; " + noPlugins,
	{preemptionFile, "TestPodGroupPreemption", "Reserve plugins are called during preemption simulation, so second pod fails"}: "upstream's mockReservePlugin (Filter and " +
		"Reserve) lets at most 2 test-plugin pods plus resource-taken pods on the node, which forces v1 (priority 15) out instead of v2 (priority 10); " + noPlugins,
	{preemptionFile, "TestPodGroupPreemption", "Topology-Aware Preemption: two topologies, both eligible, selects higher scored topology"}: "the zone is chosen by " +
		"upstream's preset mockScorePlugin (node3, node4 score 100): both zones are equal without it; " + noPlugins,
	{preemptionFile, "TestCompositePodGroupPreemption", "Reserve plugins are called during preemption simulation, so second pod fails"}: "upstream's mockReservePlugin " +
		"(maxPods 1) keeps the second test-plugin pod off the node, so the preemptors stay unschedulable; without it they preempt pg-victim; " + noPlugins,
	{preemptionFile, "TestPodGroupCycleStatePreserved", "TestPodGroupCycleStatePreserved"}: "it registers a PreFilter plugin that writes the node snapshot's pods " +
		"into the PodGroupCycleState and a PodGroupPostFilter plugin that reads them back: the scheduler's in-memory cycle state, which a separate binary does not expose; " + noPlugins,
}

const (
	queueingFile   = "podgroup/queueing/queueing_test.go"
	preemptionFile = "preemption/podgroup/podgrouppreemption_test.go"
	noPlugins      = "lockstep's binary takes no test plugins"
	midCycle       = "a PreFilter plugin of upstream's creates the pod during another member's scheduling cycle; " + noPlugins + ". lockstep's churn tests " +
		"create members while their gang is being placed (test/integration/gang/churn_test.go, test/integration/churn)"
	failsPreBind = "a PreBind plugin of upstream's fails a bind once; " + noPlugins + ". lockstep's failed binds are tested with a real refused bind " +
		"(TestPartialBindIsReported, test/integration/failover TestPartialBindIsDecidedTheSameAcrossAKill)"
	singleCycles = "the scheduler loop is not started: the test drives single cycles (ScheduleOne) and reads the order of the active queue, which a separate " +
		"binary does not expose"
)

// TestTheDocsCountEveryCase checks that docs/upstream-cases.md gives, for each of upstream's
// files, the counts the harness holds: cases, passing as upstream expects, differing (run,
// checking lockstep's outcome, for the reason given) and not run.
func TestTheDocsCountEveryCase(t *testing.T) {
	dir := upstreamDir(t)
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "upstream-cases.md"))
	if err != nil {
		t.Fatal(err)
	}
	var all [4]int
	for _, f := range upstreamFiles {
		var total, pass, differs, skipped int
		for _, c := range listUpstream(t, dir, f) {
			total++
			if _, ok := notRun[c]; ok {
				skipped++
			}
		}
		for _, cases := range f.suites {
			for _, c := range cases().cases {
				if c.differs != "" {
					differs++
				} else {
					pass++
				}
			}
		}
		want := fmt.Sprintf("| `%s` | %d | %d | %d | %d |", f.path, total, pass, differs, skipped)
		if !strings.Contains(string(doc), want+"\n") {
			t.Errorf("docs/upstream-cases.md has no row %q", want)
		}
		all = [4]int{all[0] + total, all[1] + pass, all[2] + differs, all[3] + skipped}
	}
	if want := fmt.Sprintf("| total | %d | %d | %d | %d |", all[0], all[1], all[2], all[3]); !strings.Contains(string(doc), want+"\n") {
		t.Errorf("docs/upstream-cases.md has no row %q", want)
	}
}
