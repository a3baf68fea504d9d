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
