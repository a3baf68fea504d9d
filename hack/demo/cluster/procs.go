package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// start runs a binary of bin/ in its own session, so that it outlives `make demo`, logging to
// logs/<name>.log and remembering its pid in pids/<name>.
func (c *Cluster) start(name, binary string, args ...string) error {
	logDir, pidDir := filepath.Join(c.Dir, "logs"), filepath.Join(c.Dir, "pids")
	for _, d := range []string{logDir, pidDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(c.Bin, binary), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return os.WriteFile(filepath.Join(pidDir, name), []byte(strconv.Itoa(pid)), 0o644)
}

// pids returns the processes the demo started that are still alive, by name.
func (c *Cluster) pids() map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(filepath.Join(c.Dir, "pids"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(c.Dir, "pids", e.Name()))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err == nil && alive(pid) {
			out[e.Name()] = pid
		}
	}
	return out
}

// alive fails with the end of its log if the named process is gone.
func (c *Cluster) alive(name string) error {
	if _, ok := c.pids()[name]; ok {
		return nil
	}
	log, _ := os.ReadFile(filepath.Join(c.Dir, "logs", name+".log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return fmt.Errorf("%s exited:\n%s", name, strings.Join(lines, "\n"))
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie of ours counts as gone.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || !strings.Contains(string(stat), ") Z ")
}

// stopAll stops every process the demo started: SIGTERM to each session, then SIGKILL to
// what is left after a grace period.
func (c *Cluster) stopAll() error {
	pids := c.pids()
	for _, pid := range pids {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && len(c.pids()) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	var errs []error
	for name, pid := range c.pids() {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			errs = append(errs, fmt.Errorf("killing %s (%d): %w", name, pid, err))
		}
	}
	time.Sleep(500 * time.Millisecond)
	for name, pid := range c.pids() {
		errs = append(errs, fmt.Errorf("%s (pid %d) did not stop", name, pid))
	}
	_ = os.RemoveAll(filepath.Join(c.Dir, "pids"))
	return errors.Join(errs...)
}
