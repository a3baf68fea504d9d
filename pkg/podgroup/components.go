package podgroup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

func init() {
	// Events regarding our objects are recorded through the scheduler's recorder, which
	// resolves object references with client-go's scheme.
	utilruntime.Must(v1alpha1.AddToScheme(clientgoscheme.Scheme))
}

// Components are the parts of the group model one scheduler shares between its profiles:
// the Model, the StatusWriter that publishes its conditions, and the Frameworks it acts on.
type Components struct {
	Model      *Model
	Status     *StatusWriter
	Frameworks *Frameworks
	informers  externalversions.SharedInformerFactory
}

// ComponentOptions configure NewComponents.
type ComponentOptions struct {
	// Client reaches lockstep's API (JSON: CRDs do not speak protobuf).
	Client versioned.Interface
	// Recorder records events about groups, pods and Jobs (gated on leadership by the caller).
	Recorder events.EventRecorder
	// Observer hears when a tree's attempt ends.
	Observer RoundObserver
	// PermitPlugin is the plugin whose Permit waits the model ends.
	PermitPlugin string
	// Workloads files the pods of Jobs (nil: Jobs that get a gang by their own spec).
	Workloads filing.Workloads
	// Admissions finds the Kueue Workloads that root groups' events are told on too (nil:
	// none).
	Admissions Admissions
	// Native tells when the native scheduling.k8s.io kinds are served, for lockstep to
	// schedule their groups; nil: lockstep reads only its own kinds.
	Native Served
	// Clock is the model's time and timers (nil: the wall clock); tests step it.
	Clock Clock
}

// NewComponents builds the group model of the scheduler that owns handle and connects it to
// the scheduler's informers and to lockstep's, which Start starts. The scheduler may start
// before lockstep's CRDs are installed: members then wait, and say why, until the API is
// served and the caches sync; every other pod schedules as usual.
func NewComponents(ctx context.Context, handle fwk.Handle, opts ComponentOptions) (*Components, error) {
	logger := klog.FromContext(ctx).WithName("podgroup")
	RegisterMetrics()
	if err := checkAPI(opts.Client.Discovery()); err != nil {
		logger.Error(err, "lockstep's API is not served yet; gang members wait until it is")
	}
	factory := externalversions.NewSharedInformerFactory(opts.Client, 0)
	groups := factory.Scheduling().V1alpha1()
	pods := handle.SharedInformerFactory().Core().V1().Pods().Lister()
	frameworks := NewFrameworks(opts.PermitPlugin, pods)
	teller := NewTeller(handle.ClientSet(), pods)
	go teller.Run(ctx) // it has nothing to write where no scheduling cycle runs (a standby)
	status := NewStatusWriter(opts.Client, groups.PodGroups().Lister(), groups.CompositePodGroups().Lister(), opts.Recorder)
	if opts.Admissions != nil {
		status.admissions = opts.Admissions
	}
	model := New(Options{
		Scheduler: frameworks,
		Evictor:   NewEvictor(handle.ClientSet(), opts.Recorder),
		Teller:    teller,
		Status:    status,
		Recorder:  opts.Recorder,
		Observer:  opts.Observer,
		Logger:    logger,
		Workloads: opts.Workloads,
		Clock:     opts.Clock,
	})
	var native *NativeSource
	if opts.Native != nil {
		native = NewNativeSource(handle.ClientSet(), handle.SharedInformerFactory())
		status.native = native
		native.Watch(ctx, model, opts.Native)
	}
	if err := model.Watch(ctx, handle.SharedInformerFactory(), factory, native); err != nil {
		return nil, err
	}
	pendingSource.Store(model) // lockstep_gangs_pending and lockstep_gang_oldest_pending_seconds
	return &Components{Model: model, Status: status, Frameworks: frameworks, informers: factory}, nil
}

// Start starts lockstep's informers (the scheduler starts its own).
func (c *Components) Start(ctx context.Context) { c.informers.Start(ctx.Done()) }

// Lead starts what only the leader does: announcing what a standby kept to itself, and
// writing status, until ctx is done.
func (c *Components) Lead(ctx context.Context) {
	c.Model.Lead()
	c.Status.Run(ctx, c.Model.Gate(), c.Model.HasSynced)
}

// checkAPI says, with an actionable message, when the CRDs are not installed.
func checkAPI(d discovery.DiscoveryInterface) error {
	resources, err := d.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("API %s is not served: install lockstep's CRDs (kubectl apply -f manifests/crds/)", v1alpha1.SchemeGroupVersion)
		}
		return fmt.Errorf("discovering %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	have := sets.New[string]()
	for _, r := range resources.APIResources {
		have.Insert(r.Name)
	}
	for _, want := range []string{"podgroups", "compositepodgroups"} {
		if !have.Has(want) {
			return fmt.Errorf("resource %s.%s is not served: install lockstep's CRDs (kubectl apply -f manifests/crds/)", want, v1alpha1.GroupName)
		}
	}
	return nil
}
