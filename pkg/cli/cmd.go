// Package cli implements kubectl-lockstep, the kubectl plugin that shows gang trees.
package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

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
	root.AddCommand(newGetCommand(newGetOptions(config, streams)), newExplainCommand(newExplainOptions(config, streams)), newVersionCommand(streams))
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
