package leader

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a lock whose writes succeed or fail as told.
type fakeLock struct {
	id  string
	err error
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, nil
}
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) RecordEvent(string)                                              {}
func (f *fakeLock) Identity() string                                                { return f.id }
func (f *fakeLock) Describe() string                                                { return "fake" }

func TestLockSignalsAcquisition(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		holder string
		create bool
		want   bool
	}{
		{name: "lease created as holder", create: true, holder: "me", want: true},
		{name: "lease taken over", holder: "me", want: true},
		{name: "write failed", holder: "me", err: errors.New("conflict")},
		{name: "another holder written", holder: "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New()
			l := WrapLock(&fakeLock{id: "me", err: tc.err}, e)
			rec := resourcelock.LeaderElectionRecord{HolderIdentity: tc.holder}
			if tc.create {
				_ = l.Create(t.Context(), rec)
			} else {
				_ = l.Update(t.Context(), rec)
			}
			if e.Leading() != tc.want {
				t.Errorf("Leading = %v, want %v", e.Leading(), tc.want)
			}
		})
	}
}

type countingRecorder struct{ n int }

func (c *countingRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
	c.n++
}

var _ events.EventRecorder = &countingRecorder{}

func TestRecorderIsSilentUntilLeading(t *testing.T) {
	e := New()
	inner := &countingRecorder{}
	r := GateRecorder(inner, e)
	r.Eventf(nil, nil, "Normal", "Test", "Test", "standby")
	if inner.n != 0 {
		t.Fatal("a standby recorded an event")
	}
	ran := make(chan struct{})
	e.Run(t.Context(), func(context.Context) { close(ran) })
	e.Lead()
	<-ran
	r.Eventf(nil, nil, "Normal", "Test", "Test", "leader")
	if inner.n != 1 {
		t.Errorf("%d events recorded by the leader, want 1", inner.n)
	}
}
