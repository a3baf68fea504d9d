package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	lsinformers "github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

// The view's type when printed as JSON or YAML: a list of gang trees, not an API object.
const (
	listAPIVersion = "lockstep.dev/v1"
	listKind       = "GangTreeList"
)

type getOptions struct {
	clusterOptions

	output string
	watch  bool
	refs   []tree.Ref
}

// newGetOptions are the options of the kubeconfig's cluster.
func newGetOptions(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *getOptions {
	return &getOptions{clusterOptions: newClusterOptions(config, streams)}
}

func newGetCommand(o *getOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get [NAME | TYPE/NAME ...]",
		Short: "Show gang trees with policies, pod counts, conditions and each pod's topology path",
		Long: `Show gang trees: CompositePodGroups, PodGroups and their pods, with each group's policy and
minimum, pods existing and bound, its condition, and each pod's place in the topology
(-o wide first prints the topology levels and where they were read).

NAME is a group's name or the name of the object it was made for (a Job's groups are found by
the Job's name). TYPE/NAME narrows it: pod/NAME shows the tree a pod belongs to; job/NAME,
jobset/NAME, trainjob/NAME, raycluster/NAME, lws/NAME the trees made for that workload; podgroup/NAME (lspg),
compositepodgroup/NAME (lscpg) and workload/NAME (lswl) lockstep's own objects.

The topology levels are the running scheduler's (its Deployment's configuration), unless
--levels sets them.`,
		Example: `  kubectl lockstep get -n training
  kubectl lockstep get job/finetune -o wide
  kubectl lockstep get pod/pretrain-0-x7k2p
  kubectl lockstep get -A -o yaml
  kubectl lockstep get -n training --watch`,
		RunE: func(cmd *cobra.Command, args []string) error {
			refs, err := parseRefs(args)
			if err != nil {
				return err
			}
			o.refs = refs
			switch o.output {
			case "tree", "wide", "json", "yaml":
			default:
				return fmt.Errorf("--output must be one of tree, wide, json, yaml; not %q", o.output)
			}
			return o.run(cmd.Context(), cmd.Flags().Changed("levels"))
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "tree", "Output format: tree, wide (with each pod's phase and how it joined), json or yaml.")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "After showing the trees, show them again whenever a group or pod changes.")
	return cmd
}

func (o *getOptions) run(ctx context.Context, levelsSet bool) error {
	kube, ls, ns, err := o.clients()
	if err != nil {
		return err
	}
	o.resolveLevels(ctx, kube, levelsSet)
	if o.watch {
		return o.watchTrees(ctx, kube, ls, ns)
	}
	in, err := List(ctx, kube, ls, ns)
	if err != nil {
		return err
	}
	in.Levels = o.levels
	roots := tree.Filter(tree.Build(in), o.refs)
	said, rest := o.sayQueued(ctx, ns, unheld(roots, o.refs))
	if len(roots) > 0 || len(said) == 0 {
		if len(o.refs) > 0 && len(roots) == 0 {
			return notFound(o.refs, ns)
		}
		if err := o.print(o.streams.Out, roots); err != nil {
			return err
		}
	}
	return o.tell(o.output, said, rest, len(roots) == 0, ns)
}

// tell writes what Kueue says of the workloads it holds (on the output for text, apart from
// JSON and YAML), and fails for the refs nothing holds when nothing else was shown.
func (o *clusterOptions) tell(output string, said []string, rest []tree.Ref, nothingShown bool, ns string) error {
	w := o.streams.Out
	if printerFor(output) != nil {
		w = o.streams.ErrOut
	}
	for _, s := range said {
		fmt.Fprintln(w, s)
	}
	if nothingShown && len(rest) > 0 {
		return notFound(rest, ns)
	}
	return nil
}

// print writes the view in the output format: JSON and YAML through cli-runtime's printers.
func (o *getOptions) print(w io.Writer, roots []*tree.Group) error {
	switch printer := printerFor(o.output); {
	case printer != nil:
		list, err := treeList(roots)
		if err != nil {
			return err
		}
		return printer.PrintObj(list, w)
	case len(roots) == 0:
		_, err := fmt.Fprintln(w, "No PodGroups or CompositePodGroups found.")
		return err
	case o.output == "wide":
		if len(o.levels) > 0 {
			fmt.Fprintf(w, "Topology levels, broadest first (%s): %s\n", o.levelsFrom, strings.Join(o.levels, ", "))
		}
		tree.RenderWide(w, roots)
	default:
		tree.Render(w, roots)
	}
	return nil
}

// printerFor is cli-runtime's printer of an output format, nil for the plugin's own formats.
func printerFor(output string) printers.ResourcePrinter {
	switch output {
	case "json":
		return &printers.JSONPrinter{}
	case "yaml":
		return &printers.YAMLPrinter{}
	}
	return nil
}

// treeList is the view as an object cli-runtime's printers print.
func treeList(roots []*tree.Group) (*unstructured.Unstructured, error) {
	if roots == nil {
		roots = []*tree.Group{}
	}
	return asList(listKind, roots)
}

// asList is a list of items of the plugin's own (not API) kind as an object cli-runtime's
// printers print.
func asList(kind string, items any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	var list []any
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": listAPIVersion, "kind": kind, "items": list}}, nil
}

// watchTrees shows the trees, then again after each change of a group, a pod or a node (at
// most once a second, and only when the view changed), until interrupted.
func (o *getOptions) watchTrees(ctx context.Context, kube kubernetes.Interface, ls versioned.Interface, ns string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	kubeInformers := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	pods := kubeInformers.Core().V1().Pods()
	lsInformers := lsinformers.NewSharedInformerFactoryWithOptions(ls, 0, lsinformers.WithNamespace(ns))
	pgs := lsInformers.Scheduling().V1alpha1().PodGroups()
	cpgs := lsInformers.Scheduling().V1alpha1().CompositePodGroups()
	watched := []cache.SharedIndexInformer{pods.Informer(), pgs.Informer(), cpgs.Informer()}
	// The native groups, where the cluster serves them and the user may read them.
	var native []cache.SharedIndexInformer
	if _, err := kube.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		native = append(native, kubeInformers.Scheduling().V1beta1().PodGroups().Informer())
	} else if _, err := kube.SchedulingV1alpha3().PodGroups(ns).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		native = append(native, kubeInformers.Scheduling().V1alpha3().PodGroups().Informer())
	}
	if _, err := kube.SchedulingV1alpha3().CompositePodGroups(ns).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		native = append(native, kubeInformers.Scheduling().V1alpha3().CompositePodGroups().Informer())
	}
	for _, inf := range append(watched, native...) {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	// Nodes give the pods' topology paths, when the user may read them.
	var nodeInformers informers.SharedInformerFactory
	if _, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		nodeInformers = informers.NewSharedInformerFactory(kube, 0)
		if _, err := nodeInformers.Core().V1().Nodes().Informer().AddEventHandler(handler); err != nil {
			return err
		}
		nodeInformers.Start(ctx.Done())
		nodeInformers.WaitForCacheSync(ctx.Done())
	} else if !apierrors.IsForbidden(err) {
		return fmt.Errorf("listing nodes: %w", err)
	}
	kubeInformers.Start(ctx.Done())
	lsInformers.Start(ctx.Done())
	for _, synced := range []map[reflect.Type]bool{kubeInformers.WaitForCacheSync(ctx.Done()), lsInformers.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				return fmt.Errorf("could not list %v", typ)
			}
		}
	}
	var last []byte
	for {
		in := tree.Inputs{Levels: o.levels}
		podList, _ := pods.Lister().List(labels.Everything())
		for _, p := range podList {
			in.Pods = append(in.Pods, *p)
		}
		pgList, _ := pgs.Lister().List(labels.Everything())
		for _, g := range pgList {
			in.PodGroups = append(in.PodGroups, *g)
		}
		cpgList, _ := cpgs.Lister().List(labels.Everything())
		for _, g := range cpgList {
			in.Composites = append(in.Composites, *g)
		}
		for _, inf := range native {
			for _, obj := range inf.GetStore().List() {
				addNative(&in, obj)
			}
		}
		if nodeInformers != nil {
			nodeList, _ := nodeInformers.Core().V1().Nodes().Lister().List(labels.Everything())
			for _, n := range nodeList {
				in.Nodes = append(in.Nodes, *n)
			}
		}
		var view bytes.Buffer
		if err := o.print(&view, tree.Filter(tree.Build(in), o.refs)); err != nil {
			return err
		}
		if !bytes.Equal(view.Bytes(), last) {
			switch {
			case o.output == "tree" || o.output == "wide":
				fmt.Fprintf(o.streams.Out, "--- %s\n", time.Now().Format("15:04:05"))
			case o.output == "yaml" && last != nil:
				fmt.Fprintln(o.streams.Out, "---")
			}
			if _, err := o.streams.Out.Write(view.Bytes()); err != nil {
				return err
			}
			last = view.Bytes()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
