package podgroup

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// The native scheduling.k8s.io kinds (a PodGroup of v1beta1 or v1alpha3, a CompositePodGroup
// of v1alpha3) are a second source of groups for the one model: each object is converted to
// lockstep's type of the same kind, field for field (lockstep's kinds mirror upstream's), its
// apiVersion kept so that its key is native (KeyOfObject) and its status is written back to
// it. lockstep's extensions, which the native kinds lack, are read from annotations
// (NativeAnnotations); an annotation that does not parse makes the group Invalid, told why.

// Annotations on a native PodGroup or CompositePodGroup that give it lockstep's extensions.
// They carry the names of the Job annotations that do the same where one exists.
const (
	// NativeTopologyPreferredAnnotation names a topology label key the group's pods should
	// share (a Preferred constraint; the native kinds' constraints are all Required).
	NativeTopologyPreferredAnnotation = v1alpha1.JobTopologyPreferredAnnotation
	// NativeExclusiveTopologyAnnotation names a topology label key whose domain the group
	// takes to itself (exclusive; Required, added if the spec does not name it).
	NativeExclusiveTopologyAnnotation = v1alpha1.GroupName + "/exclusive-topology"
	// NativeSliceTopologyAnnotation and NativeSliceSizeAnnotation place a PodGroup's pods in
	// slices of that size, each inside one domain of that key (sliceSize).
	NativeSliceTopologyAnnotation = v1alpha1.GroupName + "/slice-required-topology"
	NativeSliceSizeAnnotation     = v1alpha1.GroupName + "/slice-size"
	// NativeScheduleTimeoutAnnotation is a PodGroup's scheduleTimeoutSeconds.
	NativeScheduleTimeoutAnnotation = v1alpha1.JobScheduleTimeoutAnnotation
	// NativeReserveAfterAnnotation is a group's reserveAfterSeconds.
	NativeReserveAfterAnnotation = v1alpha1.GroupName + "/reserve-after-seconds"
	// NativeLeadersAnnotation and NativeFollowersTimeoutAnnotation are a gang PodGroup's
	// leaders and followersTimeoutSeconds.
	NativeLeadersAnnotation          = v1alpha1.GroupName + "/leaders"
	NativeFollowersTimeoutAnnotation = v1alpha1.FollowersTimeoutAnnotation
)

// nativeAnnotations are the extension annotations a native group may carry, for the check
// that warns of a misspelt one.
var nativeAnnotations = []string{
	NativeTopologyPreferredAnnotation, NativeExclusiveTopologyAnnotation, NativeSliceTopologyAnnotation,
	NativeSliceSizeAnnotation, NativeScheduleTimeoutAnnotation, NativeReserveAfterAnnotation,
	NativeLeadersAnnotation, NativeFollowersTimeoutAnnotation,
}

// FromNative converts a native group object (or the final state of a deleted one) to
// lockstep's type, with its extensions and, when they do not parse, why (the group is then
// Invalid). It returns nil for anything else.
func FromNative(obj any) (any, string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *schedulingv1beta1.PodGroup:
		pg := &v1alpha1.PodGroup{TypeMeta: nativeType(schedulingv1beta1.SchemeGroupVersion.String(), "PodGroup"), ObjectMeta: *o.ObjectMeta.DeepCopy()}
		pg.Status.Conditions = append([]metav1.Condition(nil), o.Status.Conditions...)
		return pg, convertPodGroupSpec(o.Spec, pg)
	case *schedulingv1alpha3.PodGroup:
		pg := &v1alpha1.PodGroup{TypeMeta: nativeType(schedulingv1alpha3.SchemeGroupVersion.String(), "PodGroup"), ObjectMeta: *o.ObjectMeta.DeepCopy()}
		pg.Status.Conditions = append([]metav1.Condition(nil), o.Status.Conditions...)
		return pg, convertPodGroupSpec(o.Spec, pg)
	case *schedulingv1alpha3.CompositePodGroup:
		cpg := &v1alpha1.CompositePodGroup{TypeMeta: nativeType(schedulingv1alpha3.SchemeGroupVersion.String(), "CompositePodGroup"), ObjectMeta: *o.ObjectMeta.DeepCopy()}
		cpg.Status.Conditions = append([]metav1.Condition(nil), o.Status.Conditions...)
		why := mirror(o.Spec, &cpg.Spec)
		if why == "" {
			why = extend(cpg.Annotations, &cpg.Spec.SchedulingConstraints, nil, &cpg.Spec.ReserveAfterSeconds, nil)
		}
		return cpg, why
	}
	return nil, ""
}

func nativeType(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// convertPodGroupSpec fills pg's spec from a native PodGroup's (either version) and its
// annotations.
func convertPodGroupSpec(spec any, pg *v1alpha1.PodGroup) string {
	if why := mirror(spec, &pg.Spec); why != "" {
		return why
	}
	return extend(pg.Annotations, &pg.Spec.SchedulingConstraints, &pg.Spec.ScheduleTimeoutSeconds, &pg.Spec.ReserveAfterSeconds, pg.Spec.SchedulingPolicy.Gang)
}

// mirror copies a native spec into lockstep's by their common JSON form: the fields lockstep
// mirrors have the same names and shapes; the native fields it has no use for (priority,
// preemptionPolicy, resourceClaims, set by admission or read by other components) are left.
// The native kinds' topology constraints are all Required.
func mirror(native, out any) string {
	data, err := json.Marshal(native)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		return fmt.Sprintf("cannot read the spec: %v", err)
	}
	var sc *v1alpha1.SchedulingConstraints
	switch s := out.(type) {
	case *v1alpha1.PodGroupSpec:
		sc = s.SchedulingConstraints
	case *v1alpha1.CompositePodGroupSpec:
		sc = s.SchedulingConstraints
	}
	if sc != nil {
		for i := range sc.Topology {
			sc.Topology[i].Mode = v1alpha1.TopologyRequired
		}
	}
	return ""
}

// extend applies the extension annotations to a converted spec: topology constraints, and
// the timeouts and leaders where the kind has them (nil where it does not).
func extend(annotations map[string]string, sc **v1alpha1.SchedulingConstraints, timeout, reserveAfter **int32, gang *v1alpha1.GangSchedulingPolicy) string {
	add := func(c v1alpha1.TopologyConstraint) {
		if *sc == nil {
			*sc = &v1alpha1.SchedulingConstraints{}
		}
		(*sc).Topology = append((*sc).Topology, c)
	}
	if key := annotations[NativeTopologyPreferredAnnotation]; key != "" {
		add(v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyPreferred})
	}
	if key := annotations[NativeExclusiveTopologyAnnotation]; key != "" {
		found := false
		if *sc != nil {
			for i, c := range (*sc).Topology {
				if c.Key == key && c.Mode == v1alpha1.TopologyRequired {
					(*sc).Topology[i].Exclusive, found = true, true
				}
			}
		}
		if !found {
			add(v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, Exclusive: true})
		}
	}
	key, sized := annotations[NativeSliceTopologyAnnotation], annotations[NativeSliceSizeAnnotation]
	if key != "" || sized != "" {
		if timeout == nil {
			return fmt.Sprintf("annotations %s and %s are for PodGroups", NativeSliceTopologyAnnotation, NativeSliceSizeAnnotation)
		}
		size, err := positive(sized)
		if key == "" || err != nil {
			return fmt.Sprintf("annotations %s and %s go together: a topology label key and a positive slice size", NativeSliceTopologyAnnotation, NativeSliceSizeAnnotation)
		}
		add(v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, SliceSize: &size})
	}
	ints := []struct {
		annotation string
		into       **int32
		min        int32
	}{
		{NativeScheduleTimeoutAnnotation, timeout, 1},
		{NativeReserveAfterAnnotation, reserveAfter, 0},
	}
	for _, f := range ints {
		v, ok := annotations[f.annotation]
		if !ok {
			continue
		}
		if f.into == nil {
			return fmt.Sprintf("annotation %s is for PodGroups", f.annotation)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || int32(n) < f.min {
			return fmt.Sprintf("annotation %s: %q is not an integer of at least %d", f.annotation, v, f.min)
		}
		i := int32(n)
		*f.into = &i
	}
	for _, a := range []string{NativeLeadersAnnotation, NativeFollowersTimeoutAnnotation} {
		v, ok := annotations[a]
		if !ok {
			continue
		}
		if gang == nil {
			return fmt.Sprintf("annotation %s is for gang PodGroups", a)
		}
		n, err := positive(v)
		if err != nil {
			return fmt.Sprintf("annotation %s: %q is not a positive integer", a, v)
		}
		if a == NativeLeadersAnnotation {
			gang.Leaders = n
		} else {
			gang.FollowersTimeoutSeconds = &n
		}
	}
	return misspelt(annotations)
}

// misspelt returns why an annotation of lockstep's group that is not one of the extensions
// is refused: a typo would otherwise be ignored silently.
func misspelt(annotations map[string]string) string {
	for a := range annotations {
		if !strings.HasPrefix(a, v1alpha1.GroupName+"/") {
			continue
		}
		known := a == v1alpha1.MadeForKindLabel || a == v1alpha1.MadeForNameLabel
		for _, k := range nativeAnnotations {
			known = known || a == k
		}
		if !known {
			return fmt.Sprintf("unknown annotation %s; lockstep reads %s", a, strings.Join(nativeAnnotations, ", "))
		}
	}
	return ""
}

func positive(v string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err == nil && n < 1 {
		err = fmt.Errorf("%d is not positive", n)
	}
	return int32(n), err
}

// ToNativePodGroup returns the native v1beta1 PodGroup that says what a lockstep PodGroup
// says, its extensions as annotations (FromNative reads it back as the same group): what a
// team moving to the native kinds writes.
func ToNativePodGroup(pg *v1alpha1.PodGroup) *schedulingv1beta1.PodGroup {
	out := &schedulingv1beta1.PodGroup{ObjectMeta: *pg.ObjectMeta.DeepCopy()}
	spec := pg.Spec.DeepCopy()
	out.Annotations = toAnnotations(out.Annotations, &spec.SchedulingConstraints, spec.ScheduleTimeoutSeconds, spec.ReserveAfterSeconds, spec.SchedulingPolicy.Gang)
	spec.ScheduleTimeoutSeconds, spec.ReserveAfterSeconds = nil, nil
	mustMirror(spec, &out.Spec)
	out.Status.Conditions = append([]metav1.Condition(nil), pg.Status.Conditions...)
	return out
}

// ToNativeCompositePodGroup is ToNativePodGroup for a CompositePodGroup (v1alpha3).
func ToNativeCompositePodGroup(cpg *v1alpha1.CompositePodGroup) *schedulingv1alpha3.CompositePodGroup {
	out := &schedulingv1alpha3.CompositePodGroup{ObjectMeta: *cpg.ObjectMeta.DeepCopy()}
	spec := cpg.Spec.DeepCopy()
	out.Annotations = toAnnotations(out.Annotations, &spec.SchedulingConstraints, nil, spec.ReserveAfterSeconds, nil)
	spec.ReserveAfterSeconds = nil
	mustMirror(spec, &out.Spec)
	out.Status.Conditions = append([]metav1.Condition(nil), cpg.Status.Conditions...)
	return out
}

// toAnnotations moves lockstep's extensions out of a spec into annotations, leaving in sc
// only the plain Required constraints the native kinds have.
func toAnnotations(annotations map[string]string, sc **v1alpha1.SchedulingConstraints, timeout, reserveAfter *int32, gang *v1alpha1.GangSchedulingPolicy) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	if *sc != nil {
		var plain []v1alpha1.TopologyConstraint
		for _, c := range (*sc).Topology {
			switch {
			case c.Mode == v1alpha1.TopologyPreferred:
				annotations[NativeTopologyPreferredAnnotation] = c.Key
			case c.SliceSize != nil:
				annotations[NativeSliceTopologyAnnotation] = c.Key
				annotations[NativeSliceSizeAnnotation] = strconv.Itoa(int(*c.SliceSize))
			case c.Exclusive:
				annotations[NativeExclusiveTopologyAnnotation] = c.Key
				plain = append(plain, v1alpha1.TopologyConstraint{Key: c.Key})
			default:
				plain = append(plain, v1alpha1.TopologyConstraint{Key: c.Key})
			}
		}
		(*sc).Topology = plain
		if len(plain) == 0 {
			*sc = nil
		}
	}
	for a, v := range map[string]*int32{NativeScheduleTimeoutAnnotation: timeout, NativeReserveAfterAnnotation: reserveAfter} {
		if v != nil {
			annotations[a] = strconv.Itoa(int(*v))
		}
	}
	if gang != nil {
		if gang.Leaders > 0 {
			annotations[NativeLeadersAnnotation] = strconv.Itoa(int(gang.Leaders))
		}
		if gang.FollowersTimeoutSeconds != nil {
			annotations[NativeFollowersTimeoutAnnotation] = strconv.Itoa(int(*gang.FollowersTimeoutSeconds))
		}
		gang.Leaders, gang.FollowersTimeoutSeconds = 0, nil
	}
	if len(annotations) == 0 {
		return nil
	}
	return annotations
}

// mustMirror copies a lockstep spec (its extensions taken out) into a native one by their
// common JSON form; the types are fixed, so it cannot fail but by a programming error.
func mustMirror(spec, out any) {
	data, err := json.Marshal(spec)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		panic(fmt.Sprintf("mirroring %T: %v", spec, err))
	}
}
