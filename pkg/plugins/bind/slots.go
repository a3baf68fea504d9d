package bind

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// Slots bound the binds outstanding at once. Waiters are served in the order they came
// (semaphore.Weighted is FIFO), so the members of the gang released first go out first.
type Slots struct {
	sem *semaphore.Weighted
}

// NewSlots returns n slots.
func NewSlots(n int64) *Slots { return &Slots{sem: semaphore.NewWeighted(n)} }

// Acquire waits for a slot, or returns the context's error.
func (s *Slots) Acquire(ctx context.Context) error {
	if err := s.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	metrics.inFlight.Inc()
	return nil
}

// Release returns a slot.
func (s *Slots) Release() {
	metrics.inFlight.Dec()
	s.sem.Release(1)
}
