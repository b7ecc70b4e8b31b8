// Command bench-watch measures 1000 concurrent watchers on Workloads: it starts a fresh local
// platform without plinth-controller (so that the only events are the benchmark's own), opens N
// watches on one namespace's Workloads — through kube-apiserver as tenant alice or directly at
// plinth-apiserver as the admin — then updates a Workload W times and reports how long each
// update took to reach every watcher, and plinth-apiserver's (and kube-apiserver's) memory
// before the watches, with them open and at its peak. `make bench-watch` runs it; the figures
// are in docs/reliability.md ("Fair under load").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// namespace is alice's, where the watched Workloads live.
const namespace = "team-a"

func main() {
	var o options
	flag.IntVar(&o.watchers, "watchers", 1000, "how many watches to open")
	flag.IntVar(&o.writes, "writes", 50, "how many updates to make while they are open")
	flag.DurationVar(&o.interval, "interval", 200*time.Millisecond, "pause between two updates")
	flag.IntVar(&o.objects, "objects", 100, "Workloads in the watched namespace")
	flag.BoolVar(&o.direct, "direct", false, "watch plinth-apiserver directly as the admin instead of through kube-apiserver as alice")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-watch:", err)
		os.Exit(1)
	}
}

type options struct {
	watchers, writes, objects int
	interval, timeout         time.Duration
	direct                    bool
	binDir                    string
}

func run(o options) error {
	if o.watchers < 1 || o.writes < 1 || o.objects < 1 {
		return errors.New("--watchers, --writes and --objects must be at least 1")
	}
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, NoController: true})
	if err != nil {
		return err
	}
	defer stop()
	adminCfg, err := platform.AdminConfig()
	if err != nil {
		return err
	}
	writer := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1().Workloads(namespace)
	err = benchharness.Parallel(ctx, o.objects, 8, func(ctx context.Context, i int) error {
		_, err := writer.Create(ctx, workload(fmt.Sprintf("watched-%04d", i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	watchCfg, route, err := watchConfig(platform, o.direct)
	if err != nil {
		return err
	}
	_, kubePID, plinthPID := platform.PIDs()
	before := usages(plinthPID, kubePID)

	watchCtx, closeWatches := context.WithCancel(ctx)
	defer closeWatches()
	ws, opened, err := openWatches(watchCtx, watchCfg, o.watchers)
	if err != nil {
		return err
	}
	// Every watch is served once it has seen a write made after the last one opened.
	if _, err := update(ctx, writer, -1); err != nil {
		return err
	}
	if err := ws.waitAll(ctx, 1); err != nil {
		return err
	}
	open := usages(plinthPID, kubePID)

	acks := make([]time.Time, o.writes)
	sent := make([]time.Time, o.writes)
	rvs := make([]string, o.writes)
	for i := 0; i < o.writes; i++ {
		sent[i] = time.Now()
		rv, err := update(ctx, writer, i)
		if err != nil {
			return err
		}
		acks[i], rvs[i] = time.Now(), rv
		time.Sleep(o.interval)
	}
	if err := ws.waitAll(ctx, 1+o.writes); err != nil {
		return err
	}
	during := usages(plinthPID, kubePID)
	closeWatches()
	ws.wait()
	time.Sleep(5 * time.Second)
	closed := usages(plinthPID, kubePID)

	fromAck, fromSend, missing := ws.latencies(rvs, acks, sent)
	fmt.Printf("watchers=%d via=%s objects=%d writes=%d interval=%s opened_in=%s events=%d missing=%d dropped=%d\n",
		o.watchers, route, o.objects, o.writes, o.interval, opened.Round(time.Millisecond), len(fromAck), missing, ws.dropped())
	fmt.Printf("event latency from ack: %s\n", fromAck)
	fmt.Printf("event latency from send: %s\n", fromSend)
	for _, u := range []struct {
		name string
		u    [2]benchharness.Usage
	}{{"before", before}, {"open", open}, {"after writes", during}, {"closed", closed}} {
		fmt.Printf("%-13s plinth-apiserver rss=%dMiB peak=%dMiB cpu=%.1fs | kube-apiserver rss=%dMiB peak=%dMiB cpu=%.1fs\n", u.name,
			u.u[0].RSSKiB/1024, u.u[0].PeakRSSKiB/1024, u.u[0].CPUSeconds, u.u[1].RSSKiB/1024, u.u[1].PeakRSSKiB/1024, u.u[1].CPUSeconds)
	}
	return nil
}

// watchConfig is alice's REST config through kube-apiserver, or with direct the admin's at
// plinth-apiserver, which accepts only the platform's client certificates.
func watchConfig(p *localplatform.Platform, direct bool) (*rest.Config, string, error) {
	if direct {
		cfg, err := p.PlinthDirectConfig()
		return cfg, "plinth-apiserver (admin)", err
	}
	cfg, err := p.ConfigFor("alice")
	if err != nil {
		return nil, "", err
	}
	return cfg, "kube-apiserver (alice)", nil
}

// usages reads plinth-apiserver's and kube-apiserver's usage; a failed read is zero, and shows
// as such.
func usages(plinthPID, kubePID int) [2]benchharness.Usage {
	p, _ := benchharness.ReadUsage(plinthPID)
	k, _ := benchharness.ReadUsage(kubePID)
	return [2]benchharness.Usage{p, k}
}

// update sets an annotation of watched-0000 to seq by a merge patch and returns the Workload's
// new resourceVersion: the one its event carries.
func update(ctx context.Context, c interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1b1.Workload, error)
}, seq int) (string, error) {
	w, err := c.Patch(ctx, "watched-0000", types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.plinth.dev/seq":"%d"}}}`, seq), metav1.PatchOptions{})
	if err != nil {
		return "", err
	}
	return w.ResourceVersion, nil
}

// openWatches opens n watches from one client (as an informer-heavy process would), 50 at a
// time, from the namespace's current resourceVersion, and returns once all have answered.
func openWatches(ctx context.Context, cfg *rest.Config, n int) (*watchers, time.Duration, error) {
	client := clientset.NewForConfigOrDie(cfg).ScoreV1b1().Workloads(namespace)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	ws := &watchers{seen: make([][]event, n)}
	start := time.Now()
	// The watches live on ctx, not on the context Parallel gives each call, which ends when
	// Parallel returns.
	err = benchharness.Parallel(ctx, n, 50, func(_ context.Context, i int) error {
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return fmt.Errorf("watch %d: %w", i, err)
		}
		ws.wg.Add(1)
		go ws.receive(ctx, i, w)
		return nil
	})
	return ws, time.Since(start), err
}

// event is a Workload update a watcher received, by resourceVersion.
type event struct {
	rv string
	at time.Time
}

// watchers are the open watches and what each has received.
type watchers struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen [][]event
	// ended counts watches the server closed before the benchmark did.
	ended int
}

func (ws *watchers) receive(ctx context.Context, i int, w watch.Interface) {
	defer ws.wg.Done()
	defer w.Stop()
	for ev := range w.ResultChan() {
		at := time.Now()
		if ev.Type != watch.Modified {
			continue
		}
		obj, ok := ev.Object.(*v1b1.Workload)
		if !ok {
			continue
		}
		ws.mu.Lock()
		ws.seen[i] = append(ws.seen[i], event{rv: obj.ResourceVersion, at: at})
		ws.mu.Unlock()
	}
	if ctx.Err() == nil {
		ws.mu.Lock()
		ws.ended++
		ws.mu.Unlock()
	}
}

// waitAll waits until every watcher has received at least n updates.
func (ws *watchers) waitAll(ctx context.Context, n int) error {
	for {
		ws.mu.Lock()
		behind := 0
		for _, s := range ws.seen {
			if len(s) < n {
				behind++
			}
		}
		ended := ws.ended
		ws.mu.Unlock()
		if behind == 0 {
			return nil
		}
		if ended > 0 {
			// A closed watch would have to be opened again: the figures would not be of n
			// concurrent watchers any more.
			return fmt.Errorf("the server closed %d of the watches", ended)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d watchers have not seen %d updates: %w", behind, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (ws *watchers) wait() { ws.wg.Wait() }

func (ws *watchers) dropped() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.ended
}

// latencies pairs every watcher's events with the updates by resourceVersion: the time from
// each update's acknowledgement and from its sending to the event's arrival. missing counts
// updates a watcher never received.
func (ws *watchers) latencies(rvs []string, acks, sent []time.Time) (fromAck, fromSend benchharness.Durations, missing int) {
	index := make(map[string]int, len(rvs))
	for i, rv := range rvs {
		index[rv] = i
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, s := range ws.seen {
		got := 0
		for _, ev := range s {
			i, ok := index[ev.rv]
			if !ok {
				continue
			}
			got++
			fromAck = append(fromAck, ev.at.Sub(acks[i]))
			fromSend = append(fromSend, ev.at.Sub(sent[i]))
		}
		missing += len(rvs) - got
	}
	return fromAck, fromSend, missing
}

func workload(name string) *v1b1.Workload {
	return &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1b1.WorkloadSpec{RuntimeClass: "kubernetes",
		Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/bench:1"}}}}
}
