package transport

import "sync"

// ProducerClients remembers which client produced with each producer id
// on this node, as the Produce requests showed it: the client id and the
// connection's remote address. The audit extension reports them; nothing
// else depends on it. Bounded: the oldest ids are forgotten first.
//
// Concurrency: safe for concurrent use.
type ProducerClients struct {
	mu    sync.Mutex
	m     map[int64]ProducerClient
	order []int64 // ring of the ids in m, oldest at next
	next  int
}

// ProducerClient is the client seen producing with a producer id.
type ProducerClient struct {
	ClientID, Address string
}

// producerClientsMax bounds the ids remembered.
const producerClientsMax = 1 << 16

// NewProducerClients returns an empty table.
func NewProducerClients() *ProducerClients {
	return &ProducerClients{m: map[int64]ProducerClient{}, order: make([]int64, 0, producerClientsMax)}
}

// Seen records that a client produced with id.
func (p *ProducerClients) Seen(id int64, c ProducerClient) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[id]; !ok {
		if len(p.order) < producerClientsMax {
			p.order = append(p.order, id)
		} else {
			delete(p.m, p.order[p.next])
			p.order[p.next] = id
			p.next = (p.next + 1) % producerClientsMax
		}
	}
	p.m[id] = c
}

// Lookup returns the client last seen producing with id.
func (p *ProducerClients) Lookup(id int64) (ProducerClient, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.m[id]
	return c, ok
}
