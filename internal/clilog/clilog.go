// Package clilog is the slog.Handler of grpokit's command and examples:
// one plain line per record, readable in a terminal,
//
//	grpokit: warning: no learning signal for 10 steps in a row steps=10
//	grpokit: memplan: Go memory limit for this run limit="2.1 GB"
//
// the program's name, "warning: " or "error: " for those levels (nothing
// for Info), the message, then the attributes as key=value (values quoted
// when they hold spaces). Records below the handler's level are dropped.
package clilog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Handler writes records as plain lines to a writer. Make it with New.
type Handler struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	level  slog.Leveler
	attrs  []byte // preformatted attributes of WithAttrs, each " k=v"
	group  string // WithGroup's prefix for later keys ("a.b.")
}

// New returns a logger whose lines go to w, each starting "name: ", for
// records at level and above (nil: slog.LevelInfo).
func New(w io.Writer, name string, level slog.Leveler) *slog.Logger {
	return slog.New(NewHandler(w, name, level))
}

// NewHandler returns the Handler of New.
func NewHandler(w io.Writer, name string, level slog.Leveler) *Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	prefix := ""
	if name != "" {
		prefix = name + ": "
	}
	return &Handler{mu: &sync.Mutex{}, w: w, prefix: prefix, level: level}
}

// Enabled reports whether records of level l are written.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle writes r as one line.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(h.prefix)
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	b.Write(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// WithAttrs returns a handler that adds attrs to every line.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	var b bytes.Buffer
	b.Write(h.attrs)
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	h2.attrs = b.Bytes()
	return &h2
}

// WithGroup returns a handler whose later attributes' keys start "name.".
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group = h.group + name + "."
	return &h2
}

// appendAttr writes " key=value" (a group's attributes as group.key=value;
// empty attributes are left out, as slog's handlers do).
func appendAttr(b *bytes.Buffer, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			appendAttr(b, g, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(a.Value.Any())
		}
	default:
		s = a.Value.String()
	}
	if needsQuote(s) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

// needsQuote reports whether a value must be quoted to read as one token.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r)
	})
}
