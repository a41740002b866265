package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// api is the Bot API as the channel uses it: getMe, sendMessage,
// editMessageText and answerCallbackQuery through github.com/go-telegram/bot,
// and getUpdates through a request of its own, because the library's
// poller confirms an update (asks for the next offset) before its handler
// has finished and keeps the offset in memory only: a crash would lose the
// update. Every error it returns is an *apiError whose text never holds
// the token (Telegram puts it in the URL path).
type api struct {
	bot    *bot.Bot
	base   string // API URL without trailing slash
	token  string
	client *http.Client
}

func newAPI(base, token string, client *http.Client, logf func(string, ...any)) (*api, error) {
	base = strings.TrimRight(base, "/")
	a := &api{base: base, token: token, client: client}
	b, err := bot.New(token,
		bot.WithSkipGetMe(),
		bot.WithServerURL(base),
		bot.WithHTTPClient(time.Minute, client),
		bot.WithErrorsHandler(func(err error) { logf("telegram: %s", a.redact(err.Error())) }),
		bot.WithDebugHandler(func(string, ...any) {}),
	)
	if err != nil {
		return nil, errors.New(a.redact(err.Error()))
	}
	a.bot = b
	return a, nil
}

// apiError is a failed Bot API call. Code is Telegram's error_code (0 for a
// network error, a 5xx page or an answer that is not the API's).
type apiError struct {
	Method     string
	Code       int
	RetryAfter time.Duration // 429's parameters.retry_after
	Msg        string        // redacted
}

func (e *apiError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("telegram %s: %d: %s", e.Method, e.Code, e.Msg)
	}
	return fmt.Sprintf("telegram %s: %s", e.Method, e.Msg)
}

// redact replaces the token wherever it appears.
func (a *api) redact(s string) string {
	if a.token == "" {
		return s
	}
	return strings.ReplaceAll(s, a.token, "<token>")
}

// wrap turns a library error into an *apiError (a cancelled context stays
// itself, so callers can tell a shutdown from a failure).
func (a *api) wrap(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// A 5xx page from a front end comes back in the error: its first line
	// is enough to say what happened.
	msg, _, _ := strings.Cut(a.redact(err.Error()), "\n")
	e := &apiError{Method: method, Msg: msg}
	var tm *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tm):
		e.Code, e.RetryAfter = http.StatusTooManyRequests, time.Duration(tm.RetryAfter)*time.Second
	case errors.Is(err, bot.ErrorBadRequest):
		e.Code = http.StatusBadRequest
	case errors.Is(err, bot.ErrorUnauthorized):
		e.Code = http.StatusUnauthorized
	case errors.Is(err, bot.ErrorForbidden):
		e.Code = http.StatusForbidden
	case errors.Is(err, bot.ErrorNotFound):
		e.Code = http.StatusNotFound
	case errors.Is(err, bot.ErrorConflict):
		e.Code = http.StatusConflict
	}
	return e
}

// callTimeout bounds every call but getUpdates, so a connection that hangs
// is retried rather than waited on forever.
const callTimeout = time.Minute

func (a *api) getMe(ctx context.Context) (*models.User, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	u, err := a.bot.GetMe(cctx)
	return u, a.wrap(ctx, "getMe", err)
}

func keyboardMarkup(rows [][]models.InlineKeyboardButton) models.ReplyMarkup {
	if len(rows) == 0 {
		return nil
	}
	return &models.InlineKeyboardMarkup{InlineKeyboard: rows}
}

func (a *api) sendMessage(ctx context.Context, chat int64, text string, rows [][]models.InlineKeyboardButton) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m, err := a.bot.SendMessage(cctx, &bot.SendMessageParams{ChatID: chat, Text: text, ReplyMarkup: keyboardMarkup(rows)})
	if err != nil {
		return 0, a.wrap(ctx, "sendMessage", err)
	}
	return m.ID, nil
}

// editMessageText replaces a message's text and removes its keyboard.
func (a *api) editMessageText(ctx context.Context, chat int64, msg int, text string) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := a.bot.EditMessageText(cctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: msg, Text: text})
	return a.wrap(ctx, "editMessageText", err)
}

func (a *api) answerCallbackQuery(ctx context.Context, id, text string) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := a.bot.AnswerCallbackQuery(cctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: id, Text: text})
	return a.wrap(ctx, "answerCallbackQuery", err)
}

// allowedUpdates are the only updates the channel asks for.
var allowedUpdates = []string{"message", "callback_query"}

// getUpdates long-polls for updates from offset (confirming every update
// below it), waiting up to timeout.
func (a *api) getUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]models.Update, error) {
	body, _ := json.Marshal(map[string]any{
		"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": allowedUpdates,
	})
	rctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, a.base+"/bot"+a.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, &apiError{Method: "getUpdates", Msg: a.redact(err.Error())}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &apiError{Method: "getUpdates", Msg: a.redact(err.Error())}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &apiError{Method: "getUpdates", Msg: a.redact(err.Error())}
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      []models.Update `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &apiError{Method: "getUpdates", Msg: fmt.Sprintf("HTTP %d, not a Bot API answer", resp.StatusCode)}
	}
	if !r.OK {
		return nil, &apiError{Method: "getUpdates", Code: r.ErrorCode, Msg: a.redact(r.Description),
			RetryAfter: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	return r.Result, nil
}
