package podgroup

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// BenchmarkNewsToWaitingGangs times what a node added to a full cluster costs the model
// with many gangs waiting for room: the news, and the batch that retries them (every chunk:
// the simulated clock runs them one after the other). In the InFloor cases the youngest
// gangs failed just before the news, within their retry floor, as a fifth of them had at
// 10,000 gangs in TestReactionUnderLoad: the batch weighs every other gang against them.
func BenchmarkNewsToWaitingGangs(b *testing.B) {
	for _, c := range []struct{ gangs, inFloor int }{{1000, 0}, {10000, 0}, {10000, 2000}} {
		gangs := c.gangs
		name := fmt.Sprintf("%dGangs", gangs)
		if c.inFloor > 0 {
			name += fmt.Sprintf("_%dInFloor", c.inFloor)
		}
		b.Run(name, func(b *testing.B) {
			var news, first time.Duration
			var stepped time.Time
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m, sched := waitingGangs(gangs, c.inFloor)
				clk := m.clock.(*simClock)
				b.StartTimer()
				start := time.Now()
				m.OnNodeAdd(lt.MakeNode(fmt.Sprintf("new%d", i), "8").Obj())
				news += time.Since(start)
				sched.first, stepped = time.Time{}, time.Now()
				clk.Step(newsDelay)
				if sched.first.IsZero() {
					b.Fatal("the news retried no gang")
				}
				first += sched.first.Sub(stepped)
			}
			b.ReportMetric(float64(news.Milliseconds())/float64(b.N), "news-ms/op")
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-scout-ms/op")
		})
	}
}

// tryAndFail lets pod, a gang's scout, in and fails its cycle for want of room.
func tryAndFail(m *Model, pod *v1.Pod) {
	m.Gate().Admit(bg, pod)
	m.Gate().Check(bg, pod, 1)
	failScout(m, pod)
}

// waitingGangs returns a model of a full node and gangs of 8 that failed for want of room,
// the last inFloor of them within their retry floor.
func waitingGangs(gangs, inFloor int) (*Model, *firstActivation) {
	sched := &firstActivation{recorder: &recorder{rejected: map[string]string{}}}
	m := New(Options{Scheduler: sched, Clock: newSimClock(epoch), Logger: klog.Background()})
	clk := m.clock.(*simClock)
	m.AddProfile(Profile{Name: testScheduler})
	m.OnNodeAdd(lt.MakeNode("full", "4").Obj())
	m.OnPod(nil, lt.MakePod().Namespace("other").Name("x").UID("x").Req(lt.CPU("4")).Node("full").Obj())
	var late []*v1.Pod
	for g := 0; g < gangs; g++ {
		name := fmt.Sprintf("g%05d", g)
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(8).Obj())
		pods := make([]*v1.Pod, 8)
		for j := range pods {
			pods[j] = lt.Member("ns", name, j).Req(lt.CPU("1")).Obj()
			m.OnPod(nil, pods[j])
		}
		if g >= gangs-inFloor {
			late = append(late, pods[0])
			continue
		}
		tryAndFail(m, pods[0])
	}
	clk.Step(2 * time.Second) // past the retry floor, within the backoff
	for _, p := range late {
		tryAndFail(m, p) // within the floor at the news
	}
	return m, sched
}

// BenchmarkPodDeletedFromAFullNode times what a small pod deleted from a full node costs the
// model with many gangs waiting for room that its room cannot help: the churn of a busy
// cluster, at every deletion.
func BenchmarkPodDeletedFromAFullNode(b *testing.B) {
	for _, gangs := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("%dGangs", gangs), func(b *testing.B) {
			m, sched := waitingGangs(gangs, 0)
			sched.first = time.Time{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				small := lt.MakePod().Namespace("other").Name(fmt.Sprintf("s%d", i)).UID(fmt.Sprintf("s%d", i)).Req(lt.CPU("10m")).Node("full").Obj()
				m.OnPod(nil, small)
				b.StartTimer()
				m.OnPodDelete(small)
			}
			b.StopTimer()
			m.clock.(*simClock).Step(newsDelay)
			if !sched.first.IsZero() {
				b.Fatal("room for a 10m pod retried a gang of 1-cpu members")
			}
		})
	}
}

// firstActivation notes when the model first hands pods to the queue.
type firstActivation struct {
	*recorder
	first time.Time
}

func (f *firstActivation) Activate(logger klog.Logger, pods []*v1.Pod) {
	if f.first.IsZero() {
		f.first = time.Now()
	}
	f.recorder.Activate(logger, pods)
}
