// Go sarama (Debian's golang-github-shopify-sarama-dev, GOPATH mode) against
// a tarn node: test_kafka_sarama.sh compiles and runs it (issue 37, "Proof
// with clients written by others").
//
//		kafka_sarama BROKER
//
//	 1. sarama's DEFAULT config (Version V0_8_2_0: Produce v0 of magic-0
//	    messages, Fetch v0, ListOffsets v0, Metadata v0): N keyed messages
//	    through a SyncProducer, read back from the oldest offset, each once at
//	    its offset with its key and value.
//	 2. The same with Version V2_0_0_0 (Produce v3 of magic-2 batches, Fetch v4+).
//	 3. The ClusterAdmin: CreateTopic, ListTopics, DescribeTopics,
//	    DescribeConfig, AlterConfig, CreatePartitions, DeleteRecords,
//	    ListConsumerGroups, DescribeConsumerGroups, DeleteGroups (sarama 1.22
//	    has no DeleteConsumerGroup: the broker call), DescribeCluster,
//	    DeleteTopic, each checked for its effect.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/Shopify/sarama"
)

const n = 50

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", a...)
	os.Exit(1)
}

// roundTrip produces n keyed messages to topic through a SyncProducer of
// config pcfg and consumes them back from the oldest offset with a consumer
// of config ccfg: every one once, at its offset.
func roundTrip(broker string, pcfg, ccfg *sarama.Config, topic, tag string) {
	pcfg.Producer.Return.Successes = true
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pclient, err := sarama.NewClient([]string{broker}, pcfg)
	if err != nil {
		fail("%s: client: %v", tag, err)
	}
	defer pclient.Close()
	client, err := sarama.NewClient([]string{broker}, ccfg)
	if err != nil {
		fail("%s: client: %v", tag, err)
	}
	defer client.Close()
	p, err := sarama.NewSyncProducerFromClient(pclient)
	if err != nil {
		fail("%s: producer: %v", tag, err)
	}
	offsets := make(map[int64]int)
	for i := 0; i < n; i++ {
		msg := &sarama.ProducerMessage{Topic: topic, Partition: 0,
			Key:   sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("%s-v%d", tag, i))}
		part, off, err := p.SendMessage(msg)
		if err != nil {
			fail("%s: send %d: %v", tag, i, err)
		}
		if part != 0 || off != int64(i) {
			fail("%s: message %d at partition %d offset %d, want 0/%d", tag, i, part, off, i)
		}
		offsets[off] = i
	}
	if err := p.Close(); err != nil {
		fail("%s: producer close: %v", tag, err)
	}
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail("%s: consumer: %v", tag, err)
	}
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		fail("%s: consume: %v", tag, err)
	}
	seen := make(map[int64]bool)
	deadline := time.After(20 * time.Second)
	for len(seen) < n {
		select {
		case m := <-pc.Messages():
			i, ok := offsets[m.Offset]
			if !ok || seen[m.Offset] {
				fail("%s: offset %d unexpected or twice", tag, m.Offset)
			}
			if string(m.Key) != fmt.Sprintf("k%d", i) || string(m.Value) != fmt.Sprintf("%s-v%d", tag, i) {
				fail("%s: offset %d holds %q=%q", tag, m.Offset, m.Key, m.Value)
			}
			seen[m.Offset] = true
		case e := <-pc.Errors():
			fail("%s: consume error: %v", tag, e)
		case <-deadline:
			fail("%s: %d of %d messages read back", tag, len(seen), n)
		}
	}
	pc.Close()
	c.Close()
	fmt.Printf("%s: %d messages produced and read back at their offsets\n", tag, n)
}

func admin(broker string) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_0_0_0
	cfg.Producer.Partitioner = sarama.NewManualPartitioner // ProducerMessage.Partition
	cfg.Producer.Return.Successes = true
	client, err := sarama.NewClient([]string{broker}, cfg)
	if err != nil {
		fail("admin client: %v", err)
	}
	defer client.Close()
	ca, err := sarama.NewClusterAdmin([]string{broker}, cfg)
	if err != nil {
		fail("cluster admin: %v", err)
	}
	defer ca.Close()
	const t = "sarama-admin"
	if err := ca.CreateTopic(t, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		fail("CreateTopic: %v", err)
	}
	topics, err := ca.ListTopics()
	if err != nil {
		fail("ListTopics: %v", err)
	}
	if d, ok := topics[t]; !ok || d.NumPartitions != 1 {
		fail("ListTopics: %s missing or not 1 partition: %+v", t, topics[t])
	}
	md, err := ca.DescribeTopics([]string{t})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 1 {
		fail("DescribeTopics: %v %+v", err, md)
	}
	ms := "7200000"
	if err := ca.AlterConfig(sarama.TopicResource, t, map[string]*string{"retention.ms": &ms}, false); err != nil {
		fail("AlterConfig: %v", err)
	}
	entries, err := ca.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: t})
	if err != nil {
		fail("DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = e.Value == ms
		}
	}
	if !found {
		fail("DescribeConfig: retention.ms is not %s after AlterConfig: %+v", ms, entries)
	}
	if err := ca.CreatePartitions(t, 3, nil, false); err != nil {
		fail("CreatePartitions: %v", err)
	}
	md, err = ca.DescribeTopics([]string{t})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 3 {
		fail("DescribeTopics after CreatePartitions: %v %+v", err, md)
	}
	// ten records in partition 0, then DeleteRecords before 4: the log
	// starts at 4 for GetOffset and for a consumer from the oldest
	p, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		fail("producer: %v", err)
	}
	for i := 0; i < 10; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: t, Partition: 0,
			Value: sarama.StringEncoder(fmt.Sprintf("r%d", i))}); err != nil {
			fail("send: %v", err)
		}
	}
	p.Close()
	if err := ca.DeleteRecords(t, map[int32]int64{0: 4}); err != nil {
		fail("DeleteRecords: %v", err)
	}
	if err := client.RefreshMetadata(t); err != nil {
		fail("refresh: %v", err)
	}
	if first, err := client.GetOffset(t, 0, sarama.OffsetOldest); err != nil || first != 4 {
		// what the partition answered (sarama 1.22's DeleteRecords does not look)
		ctl, _ := client.Controller()
		rsp, derr := ctl.DeleteRecords(&sarama.DeleteRecordsRequest{Timeout: time.Second,
			Topics: map[string]*sarama.DeleteRecordsRequestTopic{t: {PartitionOffsets: map[int32]int64{0: 4}}}})
		if derr == nil && rsp.Topics[t] != nil && rsp.Topics[t].Partitions[0] != nil {
			pr := rsp.Topics[t].Partitions[0]
			fail("GetOffset oldest after DeleteRecords: %d %v, want 4 (DeleteRecords again: %v, low watermark %d)",
				first, err, pr.Err, pr.LowWatermark)
		}
		fail("GetOffset oldest after DeleteRecords: %d %v, want 4 (DeleteRecords again: %v)", first, err, derr)
	}
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail("consumer: %v", err)
	}
	pc, err := c.ConsumePartition(t, 0, sarama.OffsetOldest)
	if err != nil {
		fail("consume: %v", err)
	}
	select {
	case m := <-pc.Messages():
		if m.Offset != 4 || string(m.Value) != "r4" {
			fail("first record after DeleteRecords at %d %q, want 4 r4", m.Offset, m.Value)
		}
	case <-time.After(10 * time.Second):
		fail("nothing consumed after DeleteRecords")
	}
	pc.Close()
	c.Close()
	// a group of plain commits (the offset manager): listed, described,
	// deleted
	const g = "sarama-group"
	om, err := sarama.NewOffsetManagerFromClient(g, client)
	if err != nil {
		fail("offset manager: %v", err)
	}
	pom, err := om.ManagePartition(t, 0)
	if err != nil {
		fail("manage partition: %v", err)
	}
	pom.MarkOffset(7, "")
	pom.Close()
	if err := om.Close(); err != nil {
		fail("offset manager close: %v", err)
	}
	groups, err := ca.ListConsumerGroups()
	if err != nil {
		fail("ListConsumerGroups: %v", err)
	}
	if _, ok := groups[g]; !ok {
		fail("ListConsumerGroups: %s not listed: %v", g, groups)
	}
	gd, err := ca.DescribeConsumerGroups([]string{g})
	if err != nil || len(gd) != 1 || gd[0].GroupId != g || gd[0].State != "Empty" {
		fail("DescribeConsumerGroups: %v %+v", err, gd)
	}
	coord, err := client.Coordinator(g)
	if err != nil {
		fail("Coordinator: %v", err)
	}
	dr, err := coord.DeleteGroups(&sarama.DeleteGroupsRequest{Groups: []string{g}})
	if err != nil || dr.GroupErrorCodes[g] != sarama.ErrNoError {
		fail("DeleteGroups: %v %+v", err, dr)
	}
	groups, err = ca.ListConsumerGroups()
	if err != nil {
		fail("ListConsumerGroups after DeleteGroups: %v", err)
	}
	if _, ok := groups[g]; ok {
		fail("ListConsumerGroups: %s still listed after DeleteGroups", g)
	}
	// sarama 1.22's DescribeCluster sends Metadata v0, which has no
	// controller id: sarama reports -1 whatever the broker (Kafka too); the
	// controller it finds through Metadata v1 is the one broker
	brokers, controller, err := ca.DescribeCluster()
	if err != nil || len(brokers) != 1 || controller != -1 {
		fail("DescribeCluster: %v %d brokers, controller %d", err, len(brokers), controller)
	}
	if ctl, err := client.Controller(); err != nil || ctl.ID() != brokers[0].ID() {
		fail("Controller: %v, not the broker DescribeCluster lists", err)
	}
	if err := ca.DeleteTopic(t); err != nil {
		fail("DeleteTopic: %v", err)
	}
	topics, err = ca.ListTopics()
	if err != nil {
		fail("ListTopics after DeleteTopic: %v", err)
	}
	if _, ok := topics[t]; ok {
		fail("ListTopics: %s still there after DeleteTopic", t)
	}
	fmt.Println("admin: every ClusterAdmin call had its effect")
}

func main() {
	broker := os.Args[1]
	v2 := func() *sarama.Config {
		c := sarama.NewConfig()
		c.Version = sarama.V2_0_0_0
		return c
	}
	// the default config: Produce v0 of magic-0 messages, Fetch v0
	roundTrip(broker, sarama.NewConfig(), sarama.NewConfig(), "legacy", "default")
	// Version 2.0: Produce v3 of magic-2 batches, Fetch v4+
	roundTrip(broker, v2(), v2(), "modern", "v2.0")
	// magic-0 gzip wrappers (inner offsets 0: absolute in magic 0) read by
	// Fetch v4+, which hands the stored batches over: stored as their inner
	// messages, or sarama would put every record at the wrapper's offset
	gz0 := sarama.NewConfig()
	gz0.Producer.Compression = sarama.CompressionGZIP
	roundTrip(broker, gz0, v2(), "legacy-gzip", "default+gzip")
	// magic-1 gzip wrappers (Produce v2, relative inner offsets), stored
	// compressed, read by Fetch v2 (magic 1) and by Fetch v4+
	gz1 := sarama.NewConfig()
	gz1.Version = sarama.V0_10_0_0
	gz1.Producer.Compression = sarama.CompressionGZIP
	c010 := sarama.NewConfig()
	c010.Version = sarama.V0_10_0_0
	roundTrip(broker, gz1, c010, "v1-gzip", "0.10+gzip")
	gz1 = sarama.NewConfig()
	gz1.Version = sarama.V0_10_0_0
	gz1.Producer.Compression = sarama.CompressionGZIP
	roundTrip(broker, gz1, v2(), "v1-gzip-b", "0.10+gzip, v2.0 consumer")
	admin(broker)
}
