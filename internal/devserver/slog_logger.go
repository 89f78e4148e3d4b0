package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.uber.org/zap/zapcore"
)

// slogLogger adapts the Temporal server's log.Logger interface to a
// *slog.Logger. Records below min are dropped before their tags are
// converted, because the server logs a lot at Debug/Info. min is shared by
// all loggers derived with With, so it can be raised at runtime (Stop does).
type slogLogger struct {
	l   *slog.Logger
	min *slog.LevelVar
}

var (
	_ log.Logger     = slogLogger{}
	_ log.WithLogger = slogLogger{}
)

func newSlogLogger(l *slog.Logger, min *slog.LevelVar) slogLogger {
	return slogLogger{l: l, min: min}
}

func (s slogLogger) Debug(msg string, tags ...tag.Tag) { s.log(slog.LevelDebug, msg, tags) }
func (s slogLogger) Info(msg string, tags ...tag.Tag)  { s.log(slog.LevelInfo, msg, tags) }
func (s slogLogger) Warn(msg string, tags ...tag.Tag)  { s.log(slog.LevelWarn, msg, tags) }
func (s slogLogger) Error(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// DPanic panics only in development builds of zap; here it is just an error.
func (s slogLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

// Panic logs and then panics, like the server's own zap logger does.
func (s slogLogger) Panic(msg string, tags ...tag.Tag) {
	s.force(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal logs and then exits the process, like the server's own zap logger
// does. The server only calls it for unusable configuration.
func (s slogLogger) Fatal(msg string, tags ...tag.Tag) {
	s.force(slog.LevelError, "fatal: "+msg, tags)
	os.Exit(1)
}

// With returns a logger that adds tags to every record.
func (s slogLogger) With(tags ...tag.Tag) log.Logger {
	if len(tags) == 0 {
		return s
	}
	args := make([]any, 0, len(tags))
	for _, t := range tags {
		args = append(args, tagToAttr(t))
	}
	return slogLogger{l: s.l.With(args...), min: s.min}
}

func (s slogLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	if level < s.min.Level() {
		return
	}
	s.emit(level, msg, tags)
}

// force logs regardless of min (used right before panicking/exiting).
func (s slogLogger) force(level slog.Level, msg string, tags []tag.Tag) {
	s.emit(level, msg, tags)
}

func (s slogLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	// Report the server's call site, not this adapter: skip runtime.Callers,
	// emit, log/force and the exported method.
	var pcs [1]uintptr
	runtime.Callers(4, pcs[:])
	r := slog.NewRecord(time.Now(), level, msg, pcs[0])
	for _, t := range tags {
		r.AddAttrs(tagToAttr(t))
	}
	_ = s.l.Handler().Handle(ctx, r)
}

// tagToAttr converts a server log tag to a slog attribute. Server tags are
// almost always zap fields; they are encoded the way zap would encode them
// so values stay readable (durations, timestamps, protos, ...).
func tagToAttr(t tag.Tag) slog.Attr {
	zt, ok := t.(tag.ZapTag)
	if !ok {
		return slog.Any(t.Key(), t.Value())
	}
	f := zt.Field()
	switch f.Type {
	case zapcore.ErrorType:
		if err, ok := f.Interface.(error); ok && err != nil {
			return slog.String(f.Key, err.Error())
		}
		return slog.Any(f.Key, nil)
	case zapcore.StringType:
		return slog.String(f.Key, f.String)
	case zapcore.BoolType:
		return slog.Bool(f.Key, f.Integer == 1)
	case zapcore.Int64Type, zapcore.Int32Type, zapcore.Int16Type, zapcore.Int8Type:
		return slog.Int64(f.Key, f.Integer)
	case zapcore.DurationType:
		return slog.Duration(f.Key, time.Duration(f.Integer))
	case zapcore.StringerType:
		if st, ok := f.Interface.(fmt.Stringer); ok {
			return slog.String(f.Key, safeString(st))
		}
	}
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	if v, ok := enc.Fields[f.Key]; ok {
		return slog.Any(f.Key, v)
	}
	for _, v := range enc.Fields {
		return slog.Any(f.Key, v)
	}
	return slog.Any(f.Key, nil)
}

// safeString calls String on a possibly nil pointer without crashing the
// caller, mirroring zap's behavior for nil Stringers.
func safeString(st fmt.Stringer) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = "<nil>"
		}
	}()
	return st.String()
}
