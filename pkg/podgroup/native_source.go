package podgroup

import (
	"context"
	"fmt"
	"sync"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The native resources lockstep reads, in order of preference: PodGroups of v1beta1 where
// it is served (GenericWorkload, beta in 1.37), else of v1alpha3; CompositePodGroups exist
// only in v1alpha3 (CompositePodGroup, alpha).
var (
	NativePodGroupsV1beta1           = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")
	NativePodGroupsV1alpha3          = schedulingv1alpha3.SchemeGroupVersion.WithResource("podgroups")
	NativeCompositePodGroupsV1alpha3 = schedulingv1alpha3.SchemeGroupVersion.WithResource("compositepodgroups")
)

// Served tells when a resource is served (jobframework.APIs): at once if it is, else
// whenever the cluster starts serving it.
type Served interface {
	When(gvr schema.GroupVersionResource, start func())
}

// NativeSource feeds the native scheduling.k8s.io groups the cluster serves to the model,
// through the scheduler's informer factory, and writes their status. It watches one version
// of each kind: the first served of its preference, from the moment it is served.
type NativeSource struct {
	kube    kubernetes.Interface
	factory informers.SharedInformerFactory

	mu sync.Mutex
	// podGroups is the version of PodGroups watched ("" for none); composites whether
	// CompositePodGroups are.
	podGroups  string
	composites bool
	synced     []cache.InformerSynced
	// started: Watch returned; a kind served from now on starts its own informer.
	started bool
}

// NewNativeSource returns a source that reads through factory and writes through kube.
func NewNativeSource(kube kubernetes.Interface, factory informers.SharedInformerFactory) *NativeSource {
	return &NativeSource{kube: kube, factory: factory}
}

// Watch feeds the model the native kinds as they are served, starting their informers
// (factory.Start starts only those not started yet) until ctx is done.
func (n *NativeSource) Watch(ctx context.Context, m *Model, served Served) {
	logger := klog.FromContext(ctx)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.OnNativeGroup(nil, obj) },
		UpdateFunc: m.OnNativeGroup,
		DeleteFunc: m.OnNativeGroupDelete,
	}
	// informer is called only once the kind may be watched: asking the factory for an
	// informer registers it, and the scheduler waits for every informer of its factory.
	start := func(gvr schema.GroupVersionResource, informer func() cache.SharedIndexInformer, claim func() bool) {
		if err := n.canList(ctx, gvr); err != nil {
			// Without access (RBAC not updated with the binary) an informer would never sync
			// and would hold every gang member: schedule lockstep's own kinds, say why not these.
			logger.Error(err, "Cannot read native groups; lockstep schedules only its own kinds (grant the manifests' RBAC on scheduling.k8s.io and restart)", "resource", gvr)
			return
		}
		n.mu.Lock()
		ok := claim()
		n.mu.Unlock()
		if !ok {
			return
		}
		m.ReadNative(kindOf(gvr)) // before any pod naming one is filed by its informer
		reg, err := informer().AddEventHandler(handler)
		if err != nil {
			logger.Error(err, "Cannot watch native groups", "resource", gvr)
			return
		}
		n.mu.Lock()
		n.synced = append(n.synced, reg.HasSynced)
		late := n.started
		n.mu.Unlock()
		if late {
			// Served after the scheduler started its informers: start this one.
			n.factory.Start(ctx.Done())
		}
		logger.V(2).Info("Native groups served; lockstep schedules them", "resource", gvr)
	}
	claimPodGroups := func(version string) func() bool {
		return func() bool {
			if n.podGroups != "" {
				return false
			}
			n.podGroups = version
			return true
		}
	}
	served.When(NativePodGroupsV1beta1, func() {
		start(NativePodGroupsV1beta1, n.factory.Scheduling().V1beta1().PodGroups().Informer, claimPodGroups("v1beta1"))
	})
	served.When(NativePodGroupsV1alpha3, func() {
		start(NativePodGroupsV1alpha3, n.factory.Scheduling().V1alpha3().PodGroups().Informer, claimPodGroups("v1alpha3"))
	})
	served.When(NativeCompositePodGroupsV1alpha3, func() {
		start(NativeCompositePodGroupsV1alpha3, n.factory.Scheduling().V1alpha3().CompositePodGroups().Informer, func() bool {
			was := n.composites
			n.composites = true
			return !was
		})
	})
	// Kinds served at start were registered above, before the scheduler starts its factory.
	n.mu.Lock()
	n.started = true
	n.mu.Unlock()
}

// kindOf is the kind of the groups of a native resource.
func kindOf(gvr schema.GroupVersionResource) Kind {
	if gvr.Resource == "compositepodgroups" {
		return KindCompositePodGroup
	}
	return KindPodGroup
}

// canList checks that lockstep may list a native resource.
func (n *NativeSource) canList(ctx context.Context, gvr schema.GroupVersionResource) error {
	opts := metav1.ListOptions{Limit: 1}
	var err error
	switch gvr {
	case NativePodGroupsV1beta1:
		_, err = n.kube.SchedulingV1beta1().PodGroups("").List(ctx, opts)
	case NativePodGroupsV1alpha3:
		_, err = n.kube.SchedulingV1alpha3().PodGroups("").List(ctx, opts)
	case NativeCompositePodGroupsV1alpha3:
		_, err = n.kube.SchedulingV1alpha3().CompositePodGroups("").List(ctx, opts)
	default:
		err = fmt.Errorf("%s is not a native group resource", gvr)
	}
	return err
}

// exists reports whether native group k is in the watched informers (only those are asked:
// asking the factory for another kind's lister would register an informer).
func (n *NativeSource) exists(k Key) bool {
	podGroups, composites := n.Watched()
	var err error
	switch {
	case k.Kind == KindPodGroup && podGroups == "v1beta1":
		_, err = n.factory.Scheduling().V1beta1().PodGroups().Lister().PodGroups(k.Namespace).Get(k.Name)
	case k.Kind == KindPodGroup && podGroups == "v1alpha3":
		_, err = n.factory.Scheduling().V1alpha3().PodGroups().Lister().PodGroups(k.Namespace).Get(k.Name)
	case k.Kind == KindCompositePodGroup && composites:
		_, err = n.factory.Scheduling().V1alpha3().CompositePodGroups().Lister().CompositePodGroups(k.Namespace).Get(k.Name)
	default:
		return false
	}
	return err == nil
}

// Watched returns the version of PodGroups watched ("" for none) and whether
// CompositePodGroups are.
func (n *NativeSource) Watched() (podGroups string, composites bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.podGroups, n.composites
}

// HasSynced reports whether the native informers started so far have synced.
func (n *NativeSource) HasSynced() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.synced {
		if !s() {
			return false
		}
	}
	return true
}

// statusTarget returns a copy of native group k to write conditions on: the object (for
// events), its UID, its conditions and how to write them.
func (n *NativeSource) statusTarget(ctx context.Context, k Key) (runtime.Object, types.UID, *[]metav1.Condition, func() error, error) {
	podGroups, composites := n.Watched()
	switch {
	case k.Kind == KindPodGroup && podGroups == "v1beta1":
		pg, err := n.factory.Scheduling().V1beta1().PodGroups().Lister().PodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return nil, "", nil, nil, err
		}
		pg = pg.DeepCopy()
		return pg, pg.UID, &pg.Status.Conditions, func() error {
			_, err := n.kube.SchedulingV1beta1().PodGroups(k.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})
			return err
		}, nil
	case k.Kind == KindPodGroup && podGroups == "v1alpha3":
		pg, err := n.factory.Scheduling().V1alpha3().PodGroups().Lister().PodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return nil, "", nil, nil, err
		}
		pg = pg.DeepCopy()
		return pg, pg.UID, &pg.Status.Conditions, func() error {
			_, err := n.kube.SchedulingV1alpha3().PodGroups(k.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})
			return err
		}, nil
	case k.Kind == KindCompositePodGroup && composites:
		cpg, err := n.factory.Scheduling().V1alpha3().CompositePodGroups().Lister().CompositePodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return nil, "", nil, nil, err
		}
		cpg = cpg.DeepCopy()
		return cpg, cpg.UID, &cpg.Status.Conditions, func() error {
			_, err := n.kube.SchedulingV1alpha3().CompositePodGroups(k.Namespace).UpdateStatus(ctx, cpg, metav1.UpdateOptions{})
			return err
		}, nil
	}
	return nil, "", nil, nil, fmt.Errorf("%s: its kind is not watched", k)
}
