package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
)

const demoDoc = `
Runs a small simulated workload on the store (the default store, or --dir):
three agent processes each create a session and run turns — messages, tool
calls and their results, an approval, token usage — appending a durable
revision per step. One agent is killed with SIGKILL in the middle of its
run, holding its lease; a new process then acquires that session (recovery
reports the dead holder as stale and hands out a higher generation),
restores it from its latest revision and finishes it. Each session carries
labels (team, task) and a workspace: two of them belong to the project of
the current directory (its repository's top level, as 'sessions ls --here'
finds it), the scheduled one to another. The demo ends with a verification
of the sessions it wrote, 'sessions ls', this project's sessions of one
team ('sessions ls --here --label team=core') and a search
('sessions search --here flaky').

It takes a few seconds and works on an empty or an existing store: every
run creates new sessions, and the demo ends with the command that removes
them.`

// demoVictim is the agent the demo kills, once it has made demoKillAfter
// revisions durable: in its second turn, around the time it calls a tool.
const (
	demoVictim    = 1
	demoKillAfter = 11
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("demo", demoDoc, stdout, stderr)
	delay := c.fs.Duration("delay", 120*time.Millisecond, "pause between an agent's steps")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	if *delay < 0 {
		return c.usageError("--delay must not be negative")
	}
	st, err := c.openDirStore(true)
	if err != nil {
		return c.fail(err)
	}
	dir := st.Dir()
	if err := st.Close(); err != nil {
		return c.fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return c.fail(fmt.Errorf("find own binary to start agents: %w", err))
	}

	out := &lineWriter{w: stdout}
	say := func(format string, args ...any) { out.line("demo: " + fmt.Sprintf(format, args...)) }
	start := time.Now()
	wd, err := os.Getwd()
	if err != nil {
		return c.fail(err)
	}
	here, err := cli.ProjectOf(wd)
	if err != nil {
		return c.fail(err)
	}
	scripts := []*agentScript{
		{label: "agent-1", kind: session.KindPrimary, prompt: "Fix the flaky TestParseDuration on CI", turns: 2, approval: 2,
			labels:    labelFlag{map[string]string{"team": "core", "task": "bugfix"}},
			workspace: session.Workspace{Project: here, Dir: filepath.Join(here, "internal", "parse"), Branch: "fix/flaky-parse-duration"}},
		{label: "agent-2", kind: session.KindSubagent, prompt: "Triage the open issues labelled bug and draft replies", turns: 3, approval: 1,
			labels:    labelFlag{map[string]string{"team": "core", "task": "triage"}},
			workspace: session.Workspace{Project: here, Dir: here, Branch: "main"}},
		{label: "agent-3", kind: session.KindScheduled, prompt: "Nightly: refresh the dependency report", turns: 2,
			labels:    labelFlag{map[string]string{"team": "infra", "task": "report"}},
			workspace: session.Workspace{Project: "/srv/nightly/deps", Dir: "/srv/nightly/deps"}},
	}
	say("store %s", dir)
	say("starting %d agent processes; %s will be killed with SIGKILL mid-run", len(scripts), scripts[demoVictim].label)
	var procs []*agentProc
	failed := false
	for _, a := range scripts {
		a.id = sessionstore.NewID()
		a.delay = *delay
		p, err := startAgent(ctx, exe, a.label, a.args(dir, false), out)
		if err != nil {
			return c.fail(err)
		}
		say("%s (pid %d) drives session %s: %q", a.label, p.cmd.Process.Pid, a.id, a.prompt)
		procs = append(procs, p)
	}

	// Kill the victim once it has made demoKillAfter revisions durable, at
	// a random moment of its next step.
	victim, vs := procs[demoVictim], scripts[demoVictim]
	var killedAt uint64
	select {
	case <-victim.reached(demoKillAfter):
		time.Sleep(rand.N(*delay + time.Millisecond)) //nolint:gosec // G404: a random kill moment, not a secret
		killedAt = victim.lastRev()
		_ = victim.cmd.Process.Kill() // SIGKILL: no deferred Release runs
		if err := <-victim.done; err == nil {
			say("%s (pid %d) finished just before the SIGKILL could land", vs.label, victim.cmd.Process.Pid)
		} else {
			say("killed %s (pid %d) with SIGKILL after revision %d: it never released its lease", vs.label, victim.cmd.Process.Pid, killedAt)
		}
	case err := <-victim.done:
		say("%s ended before it could be killed: %v", vs.label, err)
		failed = true
	case <-ctx.Done():
		return c.fail(ctx.Err())
	}

	if killedAt > 0 {
		rescuer := &agentScript{id: vs.id, label: "rescuer", delay: *delay}
		p, err := startAgent(ctx, exe, rescuer.label, rescuer.args(dir, true), out)
		if err != nil {
			return c.fail(err)
		}
		say("rescuer (pid %d) takes over session %s", p.cmd.Process.Pid, vs.id)
		procs[demoVictim] = p
	} else {
		procs = append(procs[:demoVictim], procs[demoVictim+1:]...)
	}
	for _, p := range procs {
		if err := <-p.done; err != nil {
			say("%s failed: %v", p.name, err)
			failed = true
		}
	}
	if ctx.Err() != nil {
		return c.fail(ctx.Err())
	}
	say("all agents done in %s", time.Since(start).Round(10*time.Millisecond))

	// Verify what the agents wrote, then list the store.
	if st, err = c.openDir(dir, false); err != nil {
		return c.fail(err)
	}
	ids := make([]session.SessionID, len(scripts))
	for i, a := range scripts {
		ids[i] = a.id
	}
	rep, err := st.Verify(ctx, ids...)
	_ = st.Close() // read-only use: Verify's result is what counts
	switch {
	case err != nil:
		say("verify: %v", err)
		failed = true
	case !rep.OK():
		say("verify: CORRUPT")
		printVerify(stdout, &rep, true, cli.Palette{})
		failed = true
	default:
		records := 0
		for _, s := range rep.Sessions {
			records += s.Records
		}
		say("verify: %s, %s, all sound", cli.Plural(len(rep.Sessions), "session"), cli.Plural(records, "record"))
	}
	fmt.Fprintln(stdout)
	if code := cmdLs(ctx, []string{"--dir", dir, "--limit", "10"}, stdout, stderr); code != exitOK {
		return code
	}
	// The sessions of this project (agents 1 and 2, and those of earlier
	// runs), and where a word was said.
	fmt.Fprintln(stdout)
	say("this project's sessions of team core (sessions ls --here --label team=core; the project is %s):", here)
	if code := cmdLs(ctx, []string{"--dir", dir, "--here", "--label", "team=core", "--limit", "6"}, stdout, stderr); code != exitOK {
		return code
	}
	fmt.Fprintln(stdout)
	say("where the flaky test was discussed (sessions search --here flaky):")
	if code := cmdSearch(ctx, []string{"--dir", dir, "--here", "--limit", "3", "flaky"}, stdout, stderr); code != exitOK {
		return code
	}
	fmt.Fprintln(stdout)
	rm := make([]string, len(ids))
	for i, id := range ids {
		rm[i] = string(id)
	}
	say("the demo wrote %s to %s; remove them with:", cli.Plural(len(ids), "session"), dir)
	say("  sessions --dir %s rm %s", shellQuote(dir), strings.Join(rm, " "))
	if failed {
		return exitFail
	}
	return exitOK
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and /._-+:@%,=.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lineWriter serializes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

// agentProc is a running demo-agent process whose output is relayed,
// prefixed with its name.
type agentProc struct {
	name string
	cmd  *exec.Cmd
	done chan error // its exit, once its output is drained

	mu      sync.Mutex
	rev     uint64
	waiters map[uint64][]chan struct{}
}

func startAgent(ctx context.Context, exe, name string, args []string, out *lineWriter) (*agentProc, error) {
	cmd := exec.CommandContext(ctx, exe, args...) //nolint:gosec // G204: exe is os.Executable(), the demo starting its own agent processes
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &agentProc{name: name, cmd: cmd, done: make(chan error, 1), waiters: map[uint64][]chan struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			out.line(fmt.Sprintf("  [%s] %s", name, line))
			if rest, ok := strings.CutPrefix(line, "rev "); ok {
				if n, err := strconv.ParseUint(rest[:strings.IndexByte(rest+":", ':')], 10, 64); err == nil {
					p.durable(n)
				}
			}
		}
	})
	wg.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.line(fmt.Sprintf("  [%s] ! %s", name, sc.Text()))
		}
	})
	go func() {
		wg.Wait()
		p.done <- cmd.Wait()
	}()
	return p, nil
}

// durable records that the agent reported revision n durable.
func (p *agentProc) durable(n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rev = n
	for at, chs := range p.waiters {
		if at <= n {
			for _, ch := range chs {
				close(ch)
			}
			delete(p.waiters, at)
		}
	}
}

func (p *agentProc) lastRev() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rev
}

// reached returns a channel closed once the agent has reported revision n.
func (p *agentProc) reached(n uint64) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	if p.rev >= n {
		close(ch)
		return ch
	}
	p.waiters[n] = append(p.waiters[n], ch)
	return ch
}
