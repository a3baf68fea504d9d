package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lockstep-sched/lockstep/pkg/cli/explain"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
)

// The explanation's type when printed as JSON or YAML.
const explanationListKind = "GangExplanationList"

type explainOptions struct {
	clusterOptions

	output string
	now    func() time.Time
}

func newExplainOptions(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *explainOptions {
	return &explainOptions{clusterOptions: newClusterOptions(config, streams), now: time.Now}
}

func newExplainCommand(o *explainOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain NAME | TYPE/NAME ...",
		Short: "Say why a gang is pending, and what would make it fit",
		Long: `Say why a gang is pending and what would make it fit: for every group of the trees named that
is not placed, its conditions (and since when), what its pending pods are told, the latest
events about it, and the room the nodes have for its pending pods in each domain of the level
they must share (nodes' allocatable less their pods' requests, counting only the nodes the pods
may use: cordons, taints, node selectors and affinity applied, the nodes they refuse listed
apart; the scheduler's filters it cannot run named), then what would change the answer.

NAME and TYPE/NAME are as for get: pod/NAME, job/NAME, jobset/NAME, trainjob/NAME, raycluster/NAME, lws/NAME,
podgroup/NAME (lspg), compositepodgroup/NAME (lscpg), workload/NAME (lswl).

Counting room reads the pods of every namespace; without that access the rest is shown.`,
		Example: `  kubectl lockstep explain pod/pretrain-0-x7k2p
  kubectl lockstep explain job/finetune -n training
  kubectl lockstep explain lspg/shard-3 -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			refs, err := parseRefs(args)
			if err != nil {
				return err
			}
			switch o.output {
			case "text", "json", "yaml":
			default:
				return fmt.Errorf("--output must be one of text, json, yaml; not %q", o.output)
			}
			return o.run(cmd.Context(), refs, cmd.Flags().Changed("levels"))
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "Output format: text, json or yaml.")
	return cmd
}

func (o *explainOptions) run(ctx context.Context, refs []tree.Ref, levelsSet bool) error {
	kube, ls, ns, err := o.clients()
	if err != nil {
		return err
	}
	o.resolveLevels(ctx, kube, levelsSet)
	listed, err := List(ctx, kube, ls, ns)
	if err != nil {
		return err
	}
	listed.Levels = o.levels
	in := explain.Inputs{Inputs: listed, Now: o.now()}
	events, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
	case err != nil:
		return fmt.Errorf("listing events: %w", err)
	default:
		in.Events = events.Items
	}
	running, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	switch {
	case apierrors.IsForbidden(err):
	case err != nil:
		return fmt.Errorf("listing the pods on nodes: %w", err)
	default:
		in.Running = running.Items
	}
	es := explain.Explain(in, refs)
	said, rest := o.sayQueued(ctx, ns, unheld(tree.Filter(tree.Build(in.Inputs), refs), refs))
	if len(es) == 0 && len(said) == 0 {
		return notFound(refs, ns)
	}
	if len(es) > 0 {
		if err := o.print(es, in.Now); err != nil {
			return err
		}
	}
	return o.tell(o.output, said, rest, len(es) == 0, ns)
}

// print writes the explanations in the output format.
func (o *explainOptions) print(es []explain.Explanation, now time.Time) error {
	printer := printerFor(o.output)
	if printer == nil {
		explain.Render(o.streams.Out, es, now)
		return nil
	}
	list, err := asList(explanationListKind, es)
	if err != nil {
		return err
	}
	return printer.PrintObj(list, o.streams.Out)
}
