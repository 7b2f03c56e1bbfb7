package faulttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process whose stdout is read line by line.
type Proc struct {
	Name string
	cmd  *exec.Cmd

	lines chan string
	done  chan struct{}
	err   error
}

// StartWorker starts exe (with args, e.g. "-test.run=^$" for a test
// binary) as a worker process configured by cfg. Its stderr goes to
// stderr.
func StartWorker(exe string, args []string, cfg WorkerConfig, stderr io.Writer) (*Proc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return startProc(exe, args, cfg.Name, RoleEnv+"="+string(raw), stderr)
}

// startProc starts exe with args and env added to the environment.
func startProc(exe string, args []string, name, env string, stderr io.Writer) (*Proc, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Name: name, cmd: cmd, lines: make(chan string, 1<<14), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody is reading; drop rather than block the child
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// WaitLine waits for the next stdout line starting with prefix, skipping
// others, and returns its fields after the prefix.
func (p *Proc) WaitLine(prefix string, timeout time.Duration) ([]string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(strings.TrimPrefix(l, prefix)), nil
			}
		case <-p.done:
			// Lines already read are still in the channel.
			select {
			case l := <-p.lines:
				if strings.HasPrefix(l, prefix) {
					return strings.Fields(strings.TrimPrefix(l, prefix)), nil
				}
				continue
			default:
			}
			return nil, fmt.Errorf("process %s exited (%w) before printing %q", p.Name, p.err, prefix)
		case <-t.C:
			return nil, fmt.Errorf("process %s did not print %q within %s", p.Name, prefix, timeout)
		}
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies too, but be sure
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Pause stops the process with SIGSTOP: it holds its connections and
// leases but does nothing, as a process stuck in a long GC pause or a
// frozen VM would.
func (p *Proc) Pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Proc) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Stop asks the process to shut down (SIGTERM) and waits up to timeout
// before killing it. It reports whether the process ended by itself.
func (p *Proc) Stop(timeout time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		p.Kill()
		return false
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Procs tracks child processes so they can all be stopped at the end.
type Procs struct {
	mu    sync.Mutex
	procs []*Proc
}

// Add tracks p.
func (ps *Procs) Add(p *Proc) *Proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.procs = append(ps.procs, p)
	return p
}

// KillAll kills every tracked process still running.
func (ps *Procs) KillAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.procs {
		p.Kill()
	}
}

// Quit sends SIGQUIT to every tracked process still running: a Go
// process prints the stacks of all its goroutines and exits.
func (ps *Procs) Quit() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.procs {
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	}
}
