package mailtest

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSServer is a DNS server on loopback (UDP) that answers the DKIM key
// records of its keys (TXT at test._domainkey.DOMAIN) and NXDOMAIN to
// every other name: what a trigger's dkim_dns points at in the tests.
type DNSServer struct {
	Addr    string       // 127.0.0.1:PORT
	Queries atomic.Int32 // the questions answered
}

// StartDNS starts a DNS server for t answering keys' records.
func StartDNS(t testing.TB, keys ...Key) *DNSServer {
	t.Helper()
	recs := map[string]string{}
	for _, k := range keys {
		recs[strings.ToLower("test._domainkey."+k.Domain+".")] = k.Record()
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &DNSServer{Addr: pc.LocalAddr().String()}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := s.answer(buf[:n], recs); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return s
}

// answer is the reply to the query q (nil: q is not one).
func (s *DNSServer) answer(q []byte, recs map[string]string) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil
	}
	s.Queries.Add(1)
	question := qs[0]
	rec, ok := recs[strings.ToLower(question.Name.String())]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(question) != nil || b.StartAnswers() != nil {
		return nil
	}
	if ok && question.Type == dnsmessage.TypeTXT {
		// A TXT record is strings of at most 255 bytes; DKIM joins them.
		var parts []string
		for len(rec) > 255 {
			parts, rec = append(parts, rec[:255]), rec[255:]
		}
		parts = append(parts, rec)
		if b.TXTResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.TXTResource{TXT: parts}) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
