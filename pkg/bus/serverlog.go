package bus

import (
	"fmt"
	"log/slog"
)

// serverLogger routes the embedded nats-server's log through slog (issue
// 18: library logs go through ours, with levels). Its notices (start-up,
// shutdown, listening) are debug: the crawl says what it does itself;
// warnings and errors (JetStream limits, a store that cannot write) are
// shown. Debug and trace lines are off in the server.
type serverLogger struct{ log *slog.Logger }

func (l serverLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
