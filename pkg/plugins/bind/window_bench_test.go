package bind

import (
	"context"
	"sync"
	"testing"
	"time"
)

// server is a simulated apiserver: each bind takes latency, and it works on at most
// capacity binds at once (more queue, so their latency grows), as a busy apiserver does.
type server struct {
	latency time.Duration
	slots   chan struct{}
}

func (s *server) bind() time.Duration {
	start := time.Now()
	s.slots <- struct{}{}
	time.Sleep(s.latency)
	<-s.slots
	return time.Since(start)
}

// BenchmarkRelease1000 releases a 1000-pod gang to an apiserver whose binds take 250 ms and
// which works on 400 at once (1600 binds/s at most), through the adaptive window and through
// a fixed bound of 32 (its ceiling at 32), and reports binds per second. The fixed bound
// caps them at 32 ÷ 250 ms = 128/s; the window follows what the apiserver takes.
func BenchmarkRelease1000(b *testing.B) {
	for _, tc := range []struct {
		name string
		max  int64
	}{{"window", 1024}, {"fixed32", 32}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				s := &server{latency: 250 * time.Millisecond, slots: make(chan struct{}, 400)}
				w := NewWindow(tc.max, time.Now)
				start := time.Now()
				var wg sync.WaitGroup
				for range 1000 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := w.Acquire(context.Background()); err != nil {
							b.Error(err)
							return
						}
						w.Release(nil, s.bind())
					}()
				}
				wg.Wait()
				b.ReportMetric(1000/time.Since(start).Seconds(), "binds/s")
				b.ReportMetric(float64(w.Size()), "window")
			}
		})
	}
}
