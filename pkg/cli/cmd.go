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
	"k8s.io/client-go/rest"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// NewCommand returns the kubectl-lockstep command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	config := genericclioptions.NewConfigFlags(true)
	warnings := NewWarningHandler(streams.ErrOut)
	config.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.WarningHandler = warnings
		return c
	}
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
	if apierrors.IsNotFound(err) {
		// The kind is not served: the only case the CRDs are to blame for.
		return in, fmt.Errorf("listing PodGroups: %w (are lockstep's CRDs installed? kubectl get crd podgroups.%s)", err, v1alpha1.GroupName)
	}
	if err != nil {
		return in, fmt.Errorf("listing PodGroups: %w", err)
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
	nativePGs, nativeCPGs, err := ListNative(ctx, kube, ns)
	if err != nil {
		return in, err
	}
	in.PodGroups, in.Composites = append(in.PodGroups, nativePGs...), append(in.Composites, nativeCPGs...)
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

// ListNative lists the native scheduling.k8s.io groups of a namespace ("" for all), as
// lockstep reads them (podgroup.FromNative): PodGroups of v1beta1, else v1alpha3, and
// CompositePodGroups of v1alpha3, where the cluster serves them and the user may read them.
func ListNative(ctx context.Context, kube kubernetes.Interface, ns string) ([]v1alpha1.PodGroup, []v1alpha1.CompositePodGroup, error) {
	var in tree.Inputs
	add := func(obj any) { addNative(&in, obj) }
	unserved := func(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }
	if list, err := kube.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			add(&list.Items[i])
		}
	} else if !unserved(err) {
		return nil, nil, fmt.Errorf("listing native PodGroups: %w", err)
	} else if list, err := kube.SchedulingV1alpha3().PodGroups(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			add(&list.Items[i])
		}
	} else if !unserved(err) {
		return nil, nil, fmt.Errorf("listing native PodGroups: %w", err)
	}
	if list, err := kube.SchedulingV1alpha3().CompositePodGroups(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			add(&list.Items[i])
		}
	} else if !unserved(err) {
		return nil, nil, fmt.Errorf("listing native CompositePodGroups: %w", err)
	}
	return in.PodGroups, in.Composites, nil
}

// addNative adds a native group object to the inputs, as lockstep reads it.
func addNative(in *tree.Inputs, obj any) {
	switch o, _ := podgroup.FromNative(obj); g := o.(type) {
	case *v1alpha1.PodGroup:
		in.PodGroups = append(in.PodGroups, *g)
	case *v1alpha1.CompositePodGroup:
		in.Composites = append(in.Composites, *g)
	}
}
