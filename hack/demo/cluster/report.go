package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
)

// Gangs returns the gang trees of the demo namespace.
func (c *Cluster) Gangs(ctx context.Context) ([]*tree.Group, error) {
	kube, err := c.client()
	if err != nil {
		return nil, err
	}
	ls, err := c.Lockstep()
	if err != nil {
		return nil, err
	}
	in, err := cli.List(ctx, kube, ls, Namespace)
	if err != nil {
		return nil, err
	}
	in.Levels = configv1.DefaultTopologyLevels
	return tree.Build(in), nil
}

// Settled reports whether every group has its outcome: scheduled with all its pods bound,
// or refused with a condition that says why (no room, or invalid); if not, it names each
// group still waited for and its state.
func Settled(roots []*tree.Group) (bool, string) {
	if len(roots) == 0 {
		return false, "no groups yet"
	}
	var pending []string
	var walk func(g *tree.Group)
	walk = func(g *tree.Group) {
		who := g.Kind + " " + g.Name
		switch {
		case g.Missing:
			pending = append(pending, fmt.Sprintf("%s: does not exist, and pods name it", who))
		case g.Problem != "":
			pending = append(pending, fmt.Sprintf("%s: %s", who, g.Problem))
		case g.Condition == nil:
			pending = append(pending, who+": no condition yet (lockstep writes one after 10 s of waiting)")
		case g.Condition.Status == "True" && g.Pods != nil && g.Pods.Bound < g.Pods.Exist:
			pending = append(pending, fmt.Sprintf("%s: %d/%d pods bound", who, g.Pods.Bound, g.Pods.Exist))
		case g.Condition.Status != "True" && !strings.HasPrefix(g.Condition.Message, "cannot fit") && g.Condition.Reason != v1alpha1.ReasonInvalid:
			// Refused for want of room, or as invalid, is an outcome; anything else may change.
			pending = append(pending, fmt.Sprintf("%s: %s: %s", who, g.Condition.Reason, g.Condition.Message))
		}
		for _, ch := range g.Children {
			walk(ch)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return len(pending) == 0, strings.Join(pending, "; ")
}

// Settle waits until every example has its outcome, the Jobs queued in Kueue included.
func (c *Cluster) Settle(ctx context.Context, timeout time.Duration) error {
	var last string
	start, said := time.Now(), time.Now()
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if last != "" && time.Since(said) >= 30*time.Second {
			// Never silent for more than 30 s: what it still waits for.
			said = time.Now()
			fmt.Fprintf(c.Out, "    ... still waiting (%s): %s\n", time.Since(start).Round(time.Second), last)
		}
		roots, err := c.Gangs(ctx)
		if err != nil {
			last = "reading them: " + err.Error()
			return false, nil
		}
		ok, state := Settled(roots)
		last = state
		if !ok {
			return false, nil
		}
		queued, err := c.QueuedJobs(ctx)
		if err != nil {
			last = "reading the Jobs queued in Kueue: " + err.Error()
			return false, nil
		}
		for _, j := range queued {
			if !j.Placed() {
				last = fmt.Sprintf("Job %s, queued in Kueue: %d/%d pods bound, Kueue: %q", j.Name, j.Bound, j.Want, j.Kueue)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return settleTimeout(timeout, last)
	}
	return nil
}

// settleTimeout says what Settle waited for when it gave up, and what was still missing: the
// groups of the demo namespace (any a user added too), each with its state.
func settleTimeout(timeout time.Duration, last string) error {
	return fmt.Errorf("gave up after %s waiting for every group in namespace %s to be placed or refused with a reason "+
		"(kubectl lockstep get -n %s shows them); still waiting for: %s", timeout, Namespace, Namespace, last)
}

// Report prints every gang tree of the demo namespace: where each pod landed (zone / block /
// rack / node) or why its group waits.
func (c *Cluster) Report(ctx context.Context, w io.Writer) error {
	roots, err := c.Gangs(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGangs in namespace %s (pod: zone / block / rack / node):\n\n", Namespace)
	tree.Render(w, roots)
	queued, err := c.QueuedJobs(ctx)
	if err != nil {
		return err
	}
	reportQueued(w, queued)
	return nil
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func trim(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
