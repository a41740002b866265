package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The words recall ranks by: runs of letters and digits, case-folded and
// lower-cased, an apostrophe inside a word kept ("don't", "caroline's"),
// stop words dropped, English words stemmed (Stem). A word longer than
// maxTokenBytes is cut there.
const maxTokenBytes = 64

// tokenizer turns text into terms. It keeps what it learnt of each word
// it met (a build stems each distinct word once per tokenizer), by the
// word's 64-bit hash: two words with the same hash would share a term,
// which only changes a ranking and is far less likely than one in a
// billion.
type tokenizer struct {
	known []knownWord // open addressing by word hash, linear probing; len a power of two
	n     int         // words in known
	buf   []byte
	all   []termCount // analyse's scratch
	slots []int32     // analyse's scratch
}

type knownWord struct {
	h  uint64 // termKey of the word; 0: empty
	wi wordInfo
}

// wordInfo is what a word means to recall (small: a build looks one up for
// every word it reads).
type wordInfo struct {
	key   uint64 // termKey of the word's term; 0 for a stop word
	year  int16  // a year (timeWord)
	month uint8  // a month (timeWord)
	time  bool   // a time expression (timeWord)
}

func newTokenizer() *tokenizer { return &tokenizer{known: make([]knownWord, 1024)} }

// info returns what the lower-case word w means.
func (tk *tokenizer) info(w []byte) wordInfo {
	h := termKey(w)
	if h == 0 {
		return learn(w)
	}
	mask := uint64(len(tk.known) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch tk.known[i].h {
		case h:
			return tk.known[i].wi
		case 0:
			wi := learn(w)
			tk.known[i] = knownWord{h, wi}
			if tk.n++; 2*tk.n > len(tk.known) {
				tk.grow()
			}
			return wi
		}
	}
}

func (tk *tokenizer) grow() {
	old := tk.known
	tk.known = make([]knownWord, 2*len(old))
	mask := uint64(len(tk.known) - 1)
	for _, e := range old {
		if e.h == 0 {
			continue
		}
		i := e.h & mask
		for tk.known[i].h != 0 {
			i = (i + 1) & mask
		}
		tk.known[i] = e
	}
}

// learn works out what the lower-case word w means.
func learn(w []byte) wordInfo {
	var wi wordInfo
	if t := termOf(w); t != "" {
		wi.key = termKey(t)
	}
	m, y, ok := timeWord(w)
	wi.month, wi.year, wi.time = uint8(m), int16(y), ok
	return wi
}

// termOf returns the term of the lower-case word w: its stem, "" for a
// stop word. An apostrophe Stem keeps ("o'neil") is dropped: the term is
// the same however the word was quoted.
func termOf(w []byte) string {
	word := string(w)
	if isStopWord(word) {
		return ""
	}
	return strings.ReplaceAll(Stem(word), "'", "")
}

// words calls fn with every lower-cased word of text (stop words included),
// in order.
func (tk *tokenizer) words(text []byte, fn func(w []byte)) {
	b := tk.buf[:0]
	flush := func() {
		for len(b) > 0 && b[len(b)-1] == '\'' {
			b = b[:len(b)-1]
		}
		if len(b) > 0 {
			fn(b)
		}
		b = b[:0]
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			case c == '\'' && len(b) > 0:
			default:
				flush()
				continue
			}
			if len(b) < maxTokenBytes {
				b = append(b, c)
			}
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		switch {
		case r == '’' && len(b) > 0:
			r = '\''
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			r = unicode.ToLower(foldRune(r))
		default:
			flush()
			continue
		}
		if len(b)+utf8.RuneLen(r) <= maxTokenBytes {
			b = utf8.AppendRune(b, r)
		}
	}
	flush()
	tk.buf = b
}

// isStopWord reports whether w (lower-case) is an English stop word: the
// Snowball project's English list, which question words ("what", "when",
// "did") are part of.
func isStopWord(w string) bool {
	_, ok := stopWords[strings.ReplaceAll(w, "’", "'")]
	return ok
}

// IsStopWord reports whether w, lower-cased, is one of the stop words recall
// leaves out (the recall benchmark leaves them out of
// the questions it scores).
func IsStopWord(w string) bool { return isStopWord(strings.ToLower(w)) }

var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves what which who
		whom this that these those am is are was were be been being have has had having do does did doing would
		should could ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd
		she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't
		hadn't doesn't don't didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's
		who's what's here's there's when's where's why's how's a an the and but if or because as until while of
		at by for with about against between into through during before after above below to from up down in
		out on off over under again further then once here there when where why how all any both each few more
		most other some such no nor not only own same so than too very`) {
		m[w] = struct{}{}
	}
	return m
}()
