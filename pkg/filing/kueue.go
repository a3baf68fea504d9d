package filing

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Kueue's TAS annotation keys, gate and label.
const (
	KueuePodSetRequiredTopologyAnnotation      = "kueue.x-k8s.io/podset-required-topology"
	KueuePodSetPreferredTopologyAnnotation     = "kueue.x-k8s.io/podset-preferred-topology"
	KueuePodSetUnconstrainedTopologyAnnotation = "kueue.x-k8s.io/podset-unconstrained-topology"
	KueuePodSetSliceRequiredTopologyAnnotation = "kueue.x-k8s.io/podset-slice-required-topology"
	KueuePodSetSliceSizeAnnotation             = "kueue.x-k8s.io/podset-slice-size"
	KueuePodSetGroupNameAnnotation             = "kueue.x-k8s.io/podset-group-name"
	KueueTopologySchedulingGate                = "kueue.x-k8s.io/topology"
	KueueQueueNameLabel                        = "kueue.x-k8s.io/queue-name"
)

// KueueTopology is what a PodSet's pod-template annotations ask for.
type KueueTopology struct {
	// PodSet are the constraints on the whole PodSet (at most one Required, one Preferred).
	PodSet []v1alpha1.TopologyConstraint
	// Slice is the slice constraint (mode Required, SliceSize set), nil for none.
	Slice *v1alpha1.TopologyConstraint
	// GroupName is podset-group-name, "" for none.
	GroupName string
}

// KueueTopologyFromAnnotations reads a pod template's Kueue TAS annotations; podSetSize is
// the PodSet's pod count (0 when unknown) for checking the slice size, and sliceSizeDefault
// the slice size when the annotation is missing (0 for no default: JobSet uses the child
// Job's parallelism, as in KEP-2724). Malformed or conflicting annotations are ignored with
// a problem each (an event on the workload).
//
// Users migrating off Kueue keep these annotations, so lockstep reads them by Kueue's own
// rules (its webhooks' ValidateTASPodSetRequest and ValidateSliceSizeAnnotationUpperBound,
// its PodSetTopologyRequest builder and KEP-2724), except that where Kueue would reject the
// workload, the offending annotation is ignored and the rest honoured:
//   - required, preferred and unconstrained are mutually exclusive; as in Kueue's builder,
//     required wins over preferred, and both over unconstrained;
//   - topology values must be label keys; unconstrained must be a boolean, and asks for
//     nothing either way;
//   - slice-required-topology needs slice-size (or sliceSizeDefault), slice-size needs
//     slice-required-topology; the size is an integer from 1 to the PodSet's size. It need
//     not divide the PodSet's size: as with Kueue's partial slices, one slice is then short.
//     A bad size drops the slice constraint rather than falling back to the default;
//   - group-name is not a number, and needs required or preferred topology but no slice.
//
// Whether the slice level lies at or below the PodSet's level, and the rules across the
// PodSets of a group, need more than one template's annotations: the scheduler checks the
// former (the group is Invalid), the adapter the latter.
func KueueTopologyFromAnnotations(annotations map[string]string, podSetSize, sliceSizeDefault int32) (KueueTopology, []string) {
	var out KueueTopology
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// The PodSet's own level: the first of required, preferred, unconstrained present wins.
	exclusive := []string{KueuePodSetRequiredTopologyAnnotation, KueuePodSetPreferredTopologyAnnotation, KueuePodSetUnconstrainedTopologyAnnotation}
	chosen := ""
	for _, a := range exclusive {
		v, ok := annotations[a]
		if !ok {
			continue
		}
		if chosen != "" {
			problem("annotation %s cannot be combined with %s; ignored", a, chosen)
			continue
		}
		chosen = a
		switch a {
		case KueuePodSetUnconstrainedTopologyAnnotation:
			if _, err := strconv.ParseBool(v); err != nil {
				problem("annotation %s=%q is not true or false; ignored", a, v)
			}
		default:
			if bad := notALabelKey(a, v); bad != "" {
				problems = append(problems, bad)
				continue
			}
			mode := v1alpha1.TopologyRequired
			if a == KueuePodSetPreferredTopologyAnnotation {
				mode = v1alpha1.TopologyPreferred
			}
			out.PodSet = append(out.PodSet, v1alpha1.TopologyConstraint{Key: v, Mode: mode})
		}
	}

	sliceKey, hasSlice := annotations[KueuePodSetSliceRequiredTopologyAnnotation]
	sizeValue, hasSize := annotations[KueuePodSetSliceSizeAnnotation]
	switch {
	case hasSlice:
		if bad := notALabelKey(KueuePodSetSliceRequiredTopologyAnnotation, sliceKey); bad != "" {
			problems = append(problems, bad)
			break
		}
		size := sliceSizeDefault
		if hasSize {
			n, err := strconv.ParseInt(sizeValue, 10, 32)
			switch {
			case err != nil || n < 1:
				problem("annotation %s=%q is not a positive integer; the slice topology is ignored", KueuePodSetSliceSizeAnnotation, sizeValue)
				size = 0
			case podSetSize > 0 && int32(n) > podSetSize:
				problem("annotation %s=%q exceeds the %d pods of the pod set; the slice topology is ignored", KueuePodSetSliceSizeAnnotation, sizeValue, podSetSize)
				size = 0
			default:
				size = int32(n)
			}
		} else if size < 1 {
			problem("annotation %s needs %s; ignored", KueuePodSetSliceRequiredTopologyAnnotation, KueuePodSetSliceSizeAnnotation)
		}
		if size >= 1 {
			out.Slice = &v1alpha1.TopologyConstraint{Key: sliceKey, Mode: v1alpha1.TopologyRequired, SliceSize: &size}
		}
	case hasSize:
		problem("annotation %s needs %s; ignored", KueuePodSetSliceSizeAnnotation, KueuePodSetSliceRequiredTopologyAnnotation)
	}

	if name, ok := annotations[KueuePodSetGroupNameAnnotation]; ok {
		_, numeric := strconv.ParseUint(name, 10, 64)
		switch {
		case name == "" || numeric == nil:
			problem("annotation %s=%q is empty or a number; ignored", KueuePodSetGroupNameAnnotation, name)
		case hasSlice || hasSize:
			problem("annotation %s cannot be combined with slice topology; ignored", KueuePodSetGroupNameAnnotation)
		case len(out.PodSet) == 0:
			problem("annotation %s needs %s or %s; ignored", KueuePodSetGroupNameAnnotation, KueuePodSetRequiredTopologyAnnotation, KueuePodSetPreferredTopologyAnnotation)
		default:
			out.GroupName = name
		}
	}
	return out, problems
}

// ManagedByKueue reports whether Kueue itself admits and places the pods of a workload with
// these pod-template/workload labels and the pod's scheduling gates (queue-name label, or
// the kueue.x-k8s.io/topology gate): lockstep then leaves its topology as Kueue decided
// (reads no Kueue annotations), since Kueue pins each pod to its assigned domain through
// node selectors and a second placement would only fight it.
func ManagedByKueue(labels map[string]string, gates []v1.PodSchedulingGate) bool {
	if labels[KueueQueueNameLabel] != "" {
		return true
	}
	for _, g := range gates {
		if g.Name == KueueTopologySchedulingGate {
			return true
		}
	}
	return false
}

// Constraints returns the PodSet's constraints and its slice constraint, as one group's.
func (k KueueTopology) Constraints() []v1alpha1.TopologyConstraint {
	out := append([]v1alpha1.TopologyConstraint(nil), k.PodSet...)
	if k.Slice != nil {
		out = append(out, *k.Slice)
	}
	return out
}

// PodSetTopology returns the topology a PodSet (a Job's pods, a ReplicatedJob's, a
// scheduler-plugins PodGroup's) asks for: lockstep's topology annotations on its workload
// object (own) when there are any; else Kueue's TAS annotations on its pod template, unless
// Kueue manages the workload (its queue-name label on the object (workloadLabels) or the
// template, or the template's topology gate): Kueue then placed the pods itself, with node
// selectors, and lockstep leaves that as Kueue decided. podSetSize and sliceSizeDefault are
// KueueTopologyFromAnnotations'.
func PodSetTopology(own map[string]string, workloadLabels map[string]string, tmpl *v1.PodTemplateSpec, podSetSize, sliceSizeDefault int32) (KueueTopology, []string) {
	topology, problems := TopologyFromAnnotations(own)
	if len(topology) > 0 || len(problems) > 0 || tmpl == nil {
		return KueueTopology{PodSet: topology}, problems
	}
	if ManagedByKueue(workloadLabels, nil) || ManagedByKueue(tmpl.Labels, tmpl.Spec.SchedulingGates) {
		return KueueTopology{}, nil
	}
	return KueueTopologyFromAnnotations(tmpl.Annotations, podSetSize, sliceSizeDefault)
}
