package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RouteLibraries sends the log lines of the libraries that print their own
// (go-redis: reconnects, pool errors) through log, at warning level and
// with "lib" set, instead of raw lines on stderr before our own error.
func RouteLibraries(log *slog.Logger) {
	redis.SetLogger(redisLogger{log.With("lib", "go-redis")})
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)))
}
