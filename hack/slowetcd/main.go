// Command slowetcd stands in for etcd on PATH and runs the real one behind a proxy that delays
// every byte between the kube-apiserver and etcd: an apiserver whose every write takes as long
// as a busy production one's, where the in-process apiserver of a benchmark answers in a
// millisecond. scheduler_perf runs it with -perf-etcd-latency (test/integration/scheduler_perf).
//
// It takes etcd's arguments, moves --listen-client-urls (a unix socket, as the integration
// framework gives it) to a socket of its own, starts $SLOWETCD_REAL with them, and serves the
// original socket, each direction delayed by half of the latency $SLOWETCD_LATENCY_FILE holds
// (a Go duration, read every 100 ms; none while the file is missing or empty), so that a
// benchmark creates its nodes at full speed and then slows the apiserver. The delay is a
// pipeline, not a rate: requests in flight overlap, as on a slow network. It exits, and stops
// etcd, when its parent goes.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// latency is the round trip added now, in nanoseconds.
var latency atomic.Int64

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "slowetcd:", err)
		os.Exit(1)
	}
}

func run() error {
	real, file := os.Getenv("SLOWETCD_REAL"), os.Getenv("SLOWETCD_LATENCY_FILE")
	if real == "" || file == "" {
		return fmt.Errorf("SLOWETCD_REAL (%q) and SLOWETCD_LATENCY_FILE (%q) must be set", real, file)
	}
	go follow(file)
	args := append([]string(nil), os.Args[1:]...)
	front := ""
	for i := 0; i+1 < len(args); i++ {
		if strings.TrimLeft(args[i], "-") == "listen-client-urls" && strings.HasPrefix(args[i+1], "unix://") {
			front = strings.TrimPrefix(args[i+1], "unix://")
			args[i+1] = "unix://" + front + ".real"
		}
	}
	if front == "" {
		return fmt.Errorf("no unix --listen-client-urls in %v", os.Args[1:])
	}
	cmd := exec.Command(real, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	parent := os.Getppid()
	go func() {
		// Killed (the framework stops etcd with SIGKILL) or orphaned: etcd goes too.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		for {
			select {
			case <-sig:
			case <-time.After(time.Second):
				if os.Getppid() == parent {
					continue
				}
			}
			_ = cmd.Process.Kill()
			os.Exit(1)
		}
	}()
	ln, err := net.Listen("unix", front)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go proxy(c, front+".real")
		}
	}()
	return cmd.Wait()
}

// follow keeps latency at what file says.
func follow(file string) {
	for {
		var d time.Duration
		if data, err := os.ReadFile(file); err == nil {
			d, _ = time.ParseDuration(strings.TrimSpace(string(data)))
		}
		latency.Store(int64(d))
		time.Sleep(100 * time.Millisecond)
	}
}

// proxy joins a client to etcd, each direction delayed by half the latency.
func proxy(client net.Conn, backend string) {
	var server net.Conn
	var err error
	for i := 0; i < 100; i++ { // etcd may still be starting
		if server, err = net.Dial("unix", backend); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		client.Close()
		return
	}
	go delayed(server, client)
	delayed(client, server)
}

// chunk is what one read returned, and when it may be written on.
type chunk struct {
	data []byte
	due  time.Time
}

// delayed copies src to dst, each chunk written half the latency after it was read; it closes
// both at the end of either.
func delayed(dst, src net.Conn) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{data: buf[:n], due: time.Now().Add(time.Duration(latency.Load() / 2))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range q { // let the reader finish
	}
}
