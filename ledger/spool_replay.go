package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Ledger. The zero value is a ledger without a spool:
// an append fails when its store fails.
type Options struct {
	// Spool, when set, keeps the entries the store cannot take — an
	// append failing with an error that wraps ErrUnavailable — and the
	// ledger replays them into the store, in order, once it answers. While
	// an agent has entries in the spool, its new entries go there too, so
	// that its chain keeps the order of its decisions. The caller owns
	// the spool and closes it after the ledger.
	Spool *Spool
	// RetryEvery is how often the replayer tries the store while entries
	// wait; 0 means 1s.
	RetryEvery time.Duration
	// Logger receives replay errors other than the store being
	// unavailable; nil discards them.
	Logger *slog.Logger
}

// replayer is the goroutine that moves spooled entries into the store.
type replayer struct {
	every  time.Duration
	log    *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	active bool
	// spooling is set from the first entry spooled until the spool is
	// empty again, for one log line at each end of an outage.
	spooling atomic.Bool
}

func (r *replayer) start(l *Ledger, o Options) {
	r.every = o.RetryEvery
	if r.every <= 0 {
		r.every = time.Second
	}
	r.log = o.Logger
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.stop, r.done, r.active = make(chan struct{}), make(chan struct{}), true
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.every)
		defer t.Stop()
		l.replayAll()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				l.replayAll()
			}
		}
	}()
}

// Close stops the replayer (waiting for the entry it is replaying, if any).
// It closes neither the store nor the spool.
func (l *Ledger) Close() error {
	if !l.replay.active {
		return nil
	}
	l.replay.once.Do(func() { close(l.replay.stop) })
	<-l.replay.done
	return nil
}

// Spooled returns how many entries wait in the ledger's spool for the store
// (0 without a spool).
func (l *Ledger) Spooled() int64 {
	if l.spool == nil {
		return 0
	}
	return l.spool.Pending()
}

// appendSpooling appends t to the store, or to the spool when the agent has
// entries waiting there or the store is unavailable.
func (l *Ledger) appendSpooling(ctx context.Context, t *template) (*Record, error) {
	a := l.spool.agent(t.agentID)
	a.mu.Lock()
	var storeErr error
	if !a.waiting() {
		a.mu.Unlock()
		rec, err := l.store.Append(ctx, t.agentID, t.seal)
		if !errors.Is(err, ErrUnavailable) {
			if err == nil {
				l.remember(t.agentID, t.actionID, rec.Sequence)
			}
			return rec, err
		}
		if ctx.Err() != nil {
			return nil, err // the caller is gone: it will not act on the entry
		}
		storeErr = err
		a.mu.Lock()
	}
	a.adding++
	a.mu.Unlock()
	seq, err := l.spool.add(ctx, t.agentID, t)
	a.mu.Lock()
	a.adding--
	a.head = max(a.head, seq)
	a.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("ledger: the store is unavailable and spooling failed: %w", err)
	}
	if storeErr != nil && l.replay.spooling.CompareAndSwap(false, true) {
		l.replay.log.Warn("ledger: the store is unavailable; entries go to the local spool and are replayed when it answers", "err", storeErr)
	}
	return &Record{AgentID: t.agentID, Verdict: t.verdict, ActionID: t.actionID, Spooled: true}, nil
}

// checker is a store that can tell whether its backend answers
// (RedisStore.Check).
type checker interface {
	Check(ctx context.Context) error
}

// replayAll replays every waiting agent's entries, until the store fails.
// A store that is a checker is checked first.
func (l *Ledger) replayAll() {
	ctx := context.Background()
	waiting := l.spool.waitingAgents()
	if len(waiting) == 0 {
		return
	}
	if c, ok := l.store.(checker); ok && c.Check(ctx) != nil {
		return
	}
	replayed := false
	for _, id := range waiting {
		select {
		case <-l.replay.stop:
			return
		default:
		}
		n, err := l.replayAgent(ctx, id)
		replayed = replayed || n > 0
		if err != nil {
			if !errors.Is(err, ErrUnavailable) {
				l.replay.log.Error("ledger: replaying spooled entries", "agent_id", id, "err", err)
			}
			break
		}
	}
	if replayed {
		if err := l.spool.saveMarks(); err != nil {
			l.replay.log.Error("ledger: replaying spooled entries", "err", err)
		}
		if l.spool.Pending() == 0 && l.replay.spooling.CompareAndSwap(true, false) {
			l.replay.log.Info("ledger: the store answers again; every spooled entry was replayed")
		}
		if _, err := l.spool.reset(); err != nil {
			l.replay.log.Error("ledger: emptying the replayed spool", "err", err)
		}
	}
}

// replayAgent moves the agent's spooled entries into the store, oldest
// first, each sealed on the store's head. An entry the store already holds
// is skipped: the append that spooled it may have reached the store with
// only its answer lost, and a crash may have come between a replay and its
// mark. Such entries are among the store's latest replayCheckDepth, read
// once per pass, and recognised exactly: sealed on the head before the
// stored entry, the spooled one hashes to the stored hash. It returns how
// many entries it moved or skipped.
func (l *Ledger) replayAgent(ctx context.Context, agentID string) (int, error) {
	a := l.spool.agent(agentID)
	recent, err := l.store.Latest(ctx, agentID, "", replayCheckDepth)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	n := 0
	for {
		select {
		case <-l.replay.stop:
			return n, nil
		default:
		}
		a.mu.Lock()
		if a.done >= a.head {
			a.mu.Unlock()
			return n, nil
		}
		seq := a.done + 1
		a.mu.Unlock()
		t, err := l.spool.entry(ctx, agentID, seq)
		if err != nil {
			return n, err
		}
		if !storedAmong(t, recent) {
			rec, err := l.store.Append(ctx, agentID, t.seal)
			if err != nil {
				return n, err
			}
			l.remember(agentID, t.actionID, rec.Sequence)
		}
		a.mu.Lock()
		a.done = seq
		a.mu.Unlock()
		if n++; n%replayMarkEvery == 0 {
			if err := l.spool.saveMarks(); err != nil {
				return n, err
			}
		}
	}
}

// storedAmong reports whether recs hold the entry of t.
func storedAmong(t *template, recs []*Record) bool {
	for _, r := range recs {
		if r.ActionID != t.actionID || r.Sequence < 1 {
			continue
		}
		if sealed, err := t.seal(Head{Sequence: r.Sequence - 1, Hash: r.PrevHash}); err == nil && sealed.Hash == r.Hash {
			return true
		}
	}
	return false
}
