package podgroup

import fwk "k8s.io/kube-scheduler/framework"

// planningKey marks the cycle states lockstep's planner runs the profile's PreFilter plugins
// with, to learn where a member may go: lockstep's own plugins stay out of them.
const planningKey fwk.StateKey = "lockstep.dev/planning"

type planning struct{}

func (planning) Clone() fwk.StateData { return planning{} }

// MarkPlanning marks a cycle state as the planner's.
func MarkPlanning(state fwk.CycleState) { state.Write(planningKey, planning{}) }

// Planning reports whether a cycle state is one the planner runs the profile's plugins with.
func Planning(state fwk.CycleState) bool {
	if state == nil {
		return false
	}
	_, err := state.Read(planningKey)
	return err == nil
}

// heldKey marks a cycle state in which the gang plugin refused the member at PreFilter (its
// tree is backing off, or cannot be ready): no Filter ran, so the failure says nothing
// about any node, and it is not a placement failure of the gang.
const heldKey fwk.StateKey = "lockstep.dev/held"

type held struct{}

func (held) Clone() fwk.StateData { return held{} }

// MarkHeld marks a cycle state as one whose member the gang refused before Filter.
func MarkHeld(state fwk.CycleState) { state.Write(heldKey, held{}) }

// Held reports whether the gang refused the cycle's member before Filter.
func Held(state fwk.CycleState) bool {
	if state == nil {
		return false
	}
	_, err := state.Read(heldKey)
	return err == nil
}
