package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
)

// clusterOptions are what the commands that read a cluster's gangs share: the kubeconfig,
// the namespace scope and the topology levels (the running scheduler's unless set).
type clusterOptions struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams

	allNamespaces bool
	levels        []string
	// levelsFrom says where the levels came from, for the views that print them.
	levelsFrom    string
	scheduler     string
	schedulerName string

	// clients is connect, or fakes in tests; dynamicClient reads other projects' objects
	// (Kueue's Workloads), nil where there is none.
	clients       func() (kubernetes.Interface, versioned.Interface, string, error)
	dynamicClient func() (dynamic.Interface, error)
}

func newClusterOptions(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) clusterOptions {
	o := clusterOptions{config: config, streams: streams}
	o.clients = o.connect
	o.dynamicClient = func() (dynamic.Interface, error) {
		cfg, err := config.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return dynamic.NewForConfig(cfg)
	}
	return o
}

func (o *clusterOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Look in every namespace.")
	cmd.Flags().StringSliceVar(&o.levels, "levels", nil, "Node label keys of the topology levels, broadest first (default: the running scheduler's).")
	cmd.Flags().StringVar(&o.scheduler, "scheduler", "lockstep-system/lockstep-scheduler", "NAMESPACE/NAME of the scheduler's Deployment, whose configuration gives the topology levels.")
	cmd.Flags().StringVar(&o.schedulerName, "scheduler-name", "lockstep-scheduler", "The profile (schedulerName) of that configuration.")
}

// connect makes the clients of the command's kubeconfig and picks the namespace ("" for all).
func (o *clusterOptions) connect() (kubernetes.Interface, versioned.Interface, string, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, nil, "", err
	}
	ns := ""
	if !o.allNamespaces {
		if ns, _, err = o.config.ToRawKubeConfigLoader().Namespace(); err != nil {
			return nil, nil, "", err
		}
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	jsonCfg := *cfg
	jsonCfg.ContentType = "application/json" // CRDs do not speak protobuf
	ls, err := versioned.NewForConfig(&jsonCfg)
	return kube, ls, ns, err
}

// resolveLevels reads the running scheduler's topology levels unless --levels set them, and
// falls back to the built-in default, saying so, when they cannot be read.
func (o *clusterOptions) resolveLevels(ctx context.Context, kube kubernetes.Interface, levelsSet bool) {
	if levelsSet {
		o.levelsFrom = "--levels"
		return
	}
	levels, from, err := schedulerLevels(ctx, kube, o.scheduler, o.schedulerName)
	o.levelsFrom = from
	if err != nil {
		levels = append([]string(nil), configv1.DefaultTopologyLevels...)
		o.levelsFrom = "the built-in default"
		fmt.Fprintf(o.streams.ErrOut, "Topology levels: the built-in default (%s), as the scheduler's configuration could not be read: %v. --levels sets them.\n",
			strings.Join(levels, ", "), err)
	}
	o.levels = levels
}

// parseRefs reads the NAME and TYPE/NAME arguments.
func parseRefs(args []string) ([]tree.Ref, error) {
	var refs []tree.Ref
	for _, a := range args {
		r, err := tree.ParseRef(a)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// notFound is the error when no tree holds what refs name.
func notFound(refs []tree.Ref, ns string) error {
	where := "namespace " + ns
	if ns == "" {
		where = "any namespace"
	}
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.String()
	}
	return fmt.Errorf("no gang tree holds %s in %s", strings.Join(s, ", "), where)
}
