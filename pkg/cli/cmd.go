// Package cli implements kubectl-lockstep, the kubectl plugin that shows gang trees.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
)

// NewCommand returns the kubectl-lockstep command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	config := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:          "kubectl-lockstep",
		Short:        "Show lockstep gangs: CompositePodGroups, PodGroups and where their pods are",
		SilenceUsage: true,
	}
	config.AddFlags(root.PersistentFlags())

	var allNamespaces bool
	var output string
	levels := append([]string(nil), configv1.DefaultTopologyLevels...)
	get := &cobra.Command{
		Use:   "get",
		Short: "Show gang trees with policies, pod counts, conditions and each pod's topology path",
		Example: `  kubectl lockstep get -n training
  kubectl lockstep get -A -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "tree" && output != "json" {
				return fmt.Errorf("--output must be tree or json, not %q", output)
			}
			cfg, err := config.ToRESTConfig()
			if err != nil {
				return err
			}
			ns := ""
			if !allNamespaces {
				if ns, _, err = config.ToRawKubeConfigLoader().Namespace(); err != nil {
					return err
				}
			}
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			jsonCfg := *cfg
			jsonCfg.ContentType = "application/json"
			ls, err := versioned.NewForConfig(&jsonCfg)
			if err != nil {
				return err
			}
			in, err := List(cmd.Context(), kube, ls, ns)
			if err != nil {
				return err
			}
			in.Levels = levels
			return write(streams.Out, tree.Build(in), output)
		},
	}
	get.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Show gangs of every namespace.")
	get.Flags().StringVarP(&output, "output", "o", "tree", "Output format: tree or json.")
	get.Flags().StringSliceVar(&levels, "levels", levels, "Node label keys of the topology levels, broadest first, shown for each pod.")
	root.AddCommand(get, newVersionCommand(streams))
	return root
}

// List reads the objects a gang view is built from, in a namespace ("" for all).
func List(ctx context.Context, kube kubernetes.Interface, ls versioned.Interface, ns string) (tree.Inputs, error) {
	var in tree.Inputs
	pgs, err := ls.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing PodGroups (are lockstep's CRDs installed?): %w", err)
	}
	cpgs, err := ls.SchedulingV1alpha1().CompositePodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing CompositePodGroups: %w", err)
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("listing pods: %w", err)
	}
	in.PodGroups, in.Composites, in.Pods = pgs.Items, cpgs.Items, pods.Items
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		// Without access to nodes the view shows node names but no topology paths.
	case err != nil:
		return in, fmt.Errorf("listing nodes: %w", err)
	default:
		in.Nodes = nodes.Items
	}
	return in, nil
}

func write(w io.Writer, roots []*tree.Group, output string) error {
	if output == "json" {
		if roots == nil {
			roots = []*tree.Group{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(roots)
	}
	if len(roots) == 0 {
		_, err := fmt.Fprintln(w, "No PodGroups or CompositePodGroups found.")
		return err
	}
	tree.Render(w, roots)
	return nil
}
