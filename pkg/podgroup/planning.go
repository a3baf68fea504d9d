package podgroup

import fwk "k8s.io/kube-scheduler/framework"

// Marks lockstep's plugins leave in a cycle state for each other.
const (
	// planningKey marks the cycle states lockstep's planner runs the profile's PreFilter
	// plugins with, to learn where a member may go: lockstep's own plugins stay out of them.
	planningKey fwk.StateKey = "lockstep.dev/planning"
	// heldKey marks a cycle state in which the gang plugin refused the member at PreFilter
	// (its tree is backing off, or cannot be ready): no Filter ran, so the failure says
	// nothing about any node, and it is not a placement failure of the gang.
	heldKey fwk.StateKey = "lockstep.dev/held"
)

// mark is the value of a mark: its presence is all it says.
type mark struct{}

func (mark) Clone() fwk.StateData { return mark{} }

func marked(state fwk.CycleState, key fwk.StateKey) bool {
	if state == nil {
		return false
	}
	_, err := state.Read(key)
	return err == nil
}

// MarkPlanning marks a cycle state as the planner's.
func MarkPlanning(state fwk.CycleState) { state.Write(planningKey, mark{}) }

// Planning reports whether a cycle state is one the planner runs the profile's plugins with.
func Planning(state fwk.CycleState) bool { return marked(state, planningKey) }

// MarkRefused marks a cycle state as one whose member the gang refused before Filter.
func MarkRefused(state fwk.CycleState) { state.Write(heldKey, mark{}) }

// Refused reports whether the gang refused the cycle's member before Filter.
func Refused(state fwk.CycleState) bool { return marked(state, heldKey) }
