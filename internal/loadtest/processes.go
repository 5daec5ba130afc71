package loadtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
)

// processes is andon as an operator deploys it on one database: `andon
// serve --workers 0` (the API, which records cancels) and worker processes
// (`andon worker`) that execute the runs, each with MCP servers of its own
// recording to files of their own.
type processes struct {
	serve   *child
	workers []*child
	metrics []string // each worker's metrics URL
	client  *api.Client
	http    *http.Transport
	ended   chan struct{} // closed when the first child exited on its own
	endOnce sync.Once
}

// child is one andon process.
type child struct {
	name   string
	cmd    *exec.Cmd
	lines  chan string   // stderr's lines until the readiness line is found
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's, once exited
	tail   *tail         // the last of its output, for errors
	stop   bool          // the harness stopped it (not on its own)
	mu     sync.Mutex
}

// tail keeps the last lines a process wrote.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 20 {
		t.lines = t.lines[len(t.lines)-20:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// startProcesses starts serve and cfg.Processes workers on cfg.DB, each
// worker reaching MCP servers of its own (stdio: a subprocess per worker;
// HTTP: an mcptest HTTP server per worker, started by the harness) whose
// records go to the files returned.
func startProcesses(ctx context.Context, cfg Config, servers func(i int) (string, error)) (_ *processes, err error) {
	andon := cfg.Andon
	if andon == "" {
		if andon, err = buildAndon(ctx, cfg.Dir); err != nil {
			return nil, err
		}
	}
	var key [32]byte
	rand.Read(key[:])
	env := append(os.Environ(), "ANDON_MASTER_KEY="+base64.StdEncoding.EncodeToString(key[:]), "GORACE=atexit_sleep_ms=0")
	p := &processes{ended: make(chan struct{})}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// serve first: it migrates the database and writes the token.
	serveConfig := filepath.Join(cfg.Dir, "andon-serve-"+randomTag()+".yaml")
	if err := os.WriteFile(serveConfig, []byte("servers: []\n"), 0o600); err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	tokenFile := filepath.Join(cfg.Dir, "andon-"+randomTag()+".token")
	if p.serve, err = p.start(ctx, andon, env, cfg.Dir, "serve", []string{"serve", "--db", cfg.DB, "--config", serveConfig,
		"--workers", "0", "--addr", "127.0.0.1:0", "--token-file", tokenFile}); err != nil {
		return nil, err
	}
	addr, err := p.serve.waitLine(ctx, "andon: serving the API on http://")
	if err != nil {
		return nil, err
	}
	addr = strings.Fields(addr)[0]
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("loadtest: reading the API token andon serve wrote: %w", err)
	}
	p.http = &http.Transport{MaxIdleConnsPerHost: MaxWorkers, MaxIdleConns: MaxWorkers, IdleConnTimeout: time.Minute}
	p.client = &api.Client{BaseURL: "http://" + addr, HTTP: &http.Client{Transport: p.http, Timeout: 5 * time.Minute},
		Token: strings.TrimSpace(string(token))}
	workers := cfg.Workers
	if workers <= 0 {
		workers = agent.DefaultMaxConcurrentRuns
	}
	for i := range cfg.Processes {
		server, err := servers(i)
		if err != nil {
			return nil, err
		}
		config := filepath.Join(cfg.Dir, fmt.Sprintf("andon-worker%d-%s.yaml", i, randomTag()))
		if err := os.WriteFile(config, []byte("servers:\n"+server), 0o600); err != nil {
			return nil, fmt.Errorf("loadtest: %w", err)
		}
		w, err := p.start(ctx, andon, env, cfg.Dir, fmt.Sprintf("worker %d", i), []string{"worker", "--db", cfg.DB, "--config", config,
			"--workers", strconv.Itoa(workers), "--metrics-addr", "127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		p.workers = append(p.workers, w)
		line, err := w.waitLine(ctx, "andon: serving metrics on http://")
		if err != nil {
			return nil, err
		}
		p.metrics = append(p.metrics, "http://"+strings.Fields(line)[0])
		if _, err := w.waitLine(ctx, "andon: worker executing"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// buildAndon builds cmd/andon into dir and returns its path.
func buildAndon(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "andon")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/andonhq/andon/cmd/andon")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("loadtest: building andon (give one with Config.Andon): %w\n%s", err, msg)
	}
	return out, nil
}

// start starts one andon process; its stderr's lines go to lines until
// the harness has read the one it waits for, and to its tail throughout.
func (p *processes) start(ctx context.Context, andon string, env []string, dir, name string, args []string) (*child, error) {
	c := &child{name: name, cmd: exec.Command(andon, args...), lines: make(chan string, 64), exited: make(chan struct{}), tail: &tail{}}
	c.cmd.Env, c.cmd.Dir = env, dir
	c.cmd.Stdout = io.Discard
	errPipe, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: starting andon %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.tail.add(sc.Text())
			select {
			case c.lines <- sc.Text():
			default: // nobody waits for a line any more
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
		c.err = c.cmd.Wait()
		close(c.exited)
		c.mu.Lock()
		stopped := c.stop
		c.mu.Unlock()
		if !stopped {
			p.endOnce.Do(func() { close(p.ended) })
		}
	}()
	return c, nil
}

// waitLine waits for a line of c's stderr that starts with prefix and
// returns the rest of it.
func (c *child) waitLine(ctx context.Context, prefix string) (string, error) {
	for {
		select {
		case line := <-c.lines:
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest, nil
			}
		case <-c.exited:
			return "", fmt.Errorf("loadtest: andon %s exited (%v) before printing %q:\n%s", c.name, c.err, prefix, c.tail)
		case <-ctx.Done():
			return "", fmt.Errorf("loadtest: waiting for andon %s to print %q: %w\n%s", c.name, prefix, ctx.Err(), c.tail)
		}
	}
}

// halt interrupts c as Ctrl-C does and waits for it to exit (killing it
// if it lingers), and returns an error unless it exited cleanly.
func (c *child) halt() error {
	c.mu.Lock()
	c.stop = true
	c.mu.Unlock()
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-c.exited:
		case <-time.After(time.Minute):
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.exited
			return fmt.Errorf("loadtest: andon %s did not stop on SIGINT within a minute; killed:\n%s", c.name, c.tail)
		}
	}
	if c.err != nil {
		return fmt.Errorf("loadtest: andon %s: %w:\n%s", c.name, c.err, c.tail)
	}
	return nil
}

// close stops the workers, then serve, and returns what went wrong.
func (p *processes) close() error {
	var errs []error
	for _, w := range p.workers {
		errs = append(errs, w.halt())
	}
	if p.serve != nil {
		errs = append(errs, p.serve.halt())
	}
	if p.http != nil {
		p.http.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// submit creates a run through the API.
func (p *processes) submit(ctx context.Context, req *agent.Request) (string, error) {
	run, err := p.client.CreateRun(ctx, req)
	if err != nil {
		return "", err
	}
	return run.ID, nil
}

// cancel cancels a run through the API, as an operator does, and returns
// the API's took_ms.
func (p *processes) cancel(ctx context.Context, id string) (time.Duration, error) {
	res, err := p.client.CancelRun(ctx, id)
	if err != nil {
		return 0, err
	}
	return time.Duration(res.TookMS * float64(time.Millisecond)), nil
}
