/* The registry of live Kafka nodes (src/kafka/registry.c): two handles (two
 * sessions, as two nodes) on one store see each other; a node ID held by a
 * live node is refused; -1 takes the lowest free ID; a closed node leaves the
 * list (a dead one's record goes with its session); a refresh writes a lost
 * record again; the pick is a deterministic spread over the live nodes;
 * issue 37 "Failover": a node whose beats stop leaves the list within the
 * bound while its session (and record) lives, and comes back when it beats;
 * its producer claims' nonce counts as a dead node's meanwhile.
 * ctest-variants: mem sqlite */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/registry.h"
#include "tarn/meta.h"

static char uri[1024];
static char *dir;

static void open2(tarn_meta **a, tarn_meta **b) {
  assert_int_equal(tarn_meta_open(uri, a), 0);
  assert_int_equal(tarn_meta_open(uri, b), 0);
}

static void nodes_see_each_other(void **state) {
  (void)state;
  tarn_meta *m1, *m2;
  open2(&m1, &m2);
  tarn__kregistry *r1, *r2, *r3;
  assert_int_equal(tarn__kregistry_open(m1, -1, "127.0.0.1", 9092, 0, &r1), 0);
  assert_int_equal(tarn__kregistry_self(r1)->node_id, 0);
  /* an ID a live node holds is refused; -1 takes the next free one */
  assert_int_equal(tarn__kregistry_open(m2, 0, "127.0.0.1", 9093, 0, &r2), TARN_EEXIST);
  assert_int_equal(tarn__kregistry_open(m2, -1, "127.0.0.2", 9093, 0, &r2), 0);
  assert_int_equal(tarn__kregistry_self(r2)->node_id, 1);
  assert_int_equal(tarn__kregistry_open(m2, 7, "127.0.0.3", 9094, 0, &r3), 0);
  tarn__knode_info *v;
  size_t n;
  assert_int_equal(tarn__kregistry_live(r1, &v, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(v[0].node_id, 0);
  assert_int_equal(v[1].node_id, 1);
  assert_string_equal(v[1].host, "127.0.0.2");
  assert_int_equal(v[1].port, 9093);
  assert_int_equal(v[2].node_id, 7);
  free(v);
  /* node 7 leaves: seen by node 0 once its cached list (1 s) is read again */
  tarn__kregistry_close(r3);
  usleep(1100 * 1000);
  assert_int_equal(tarn__kregistry_live(r1, &v, &n), 0);
  assert_int_equal(n, 2);
  free(v);
  /* node 1's session ends (its process died): its record goes with it */
  tarn__kregistry *dead = r2;
  tarn_meta_close(m2);
  usleep(1100 * 1000);
  assert_int_equal(tarn__kregistry_live(r1, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(v[0].node_id, 0);
  free(v);
  free(dead); /* its handle is gone: closing would use it */
  tarn__kregistry_close(r1);
  tarn_meta_close(m1);
}

static void refresh_writes_a_lost_record(void **state) {
  (void)state;
  tarn_meta *m1, *m2;
  open2(&m1, &m2);
  tarn__kregistry *r1, *r2;
  assert_int_equal(tarn__kregistry_open(m1, 3, "h", 1, 0, &r1), 0);
  assert_int_equal(tarn__kregistry_open(m2, 4, "h", 2, 0, &r2), 0);
  assert_int_equal(tarn_meta_delete(m1, TARN__KREG_PARTITION, "/nodes/0000000003"), 0);
  usleep(1100 * 1000);
  tarn__knode_info *v;
  size_t n;
  assert_int_equal(tarn__kregistry_live(r2, &v, &n), 0);
  assert_int_equal(n, 1); /* node 3's record is gone */
  free(v);
  assert_int_equal(tarn__kregistry_refresh(r1), 0);
  usleep(1100 * 1000);
  assert_int_equal(tarn__kregistry_live(r2, &v, &n), 0);
  assert_int_equal(n, 2);
  free(v);
  tarn__kregistry_close(r2);
  tarn__kregistry_close(r1);
  tarn_meta_close(m2);
  tarn_meta_close(m1);
}

/* Issue 37 "Failover": node 6 stops beating (a killed or paused process
 * whose session has not expired yet): node 5, beating every
 * TARN__KREG_BEAT_MS, drops it within 3 s + a beat, its record still there;
 * a beat brings it back. */
static void a_silent_node_leaves_the_list(void **state) {
  (void)state;
  tarn_meta *m1, *m2;
  open2(&m1, &m2);
  tarn__kregistry *r1, *r2;
  assert_int_equal(tarn__kregistry_open(m1, 5, "h", 1, 0x55, &r1), 0);
  assert_int_equal(tarn__kregistry_open(m2, 6, "h", 2, 0x66, &r2), 0);
  /* whose producer claims are a live node's: by the nonce in the records */
  assert_int_equal(tarn__kregistry_owner_alive(r1, 0x66), 1);
  assert_int_equal(tarn__kregistry_owner_alive(r1, 0x55), 1);
  assert_int_equal(tarn__kregistry_owner_alive(r1, 0x77), 0); /* no live node's */
  tarn__knode_info *v;
  size_t n = 0;
  int ms = 0, beats_of_6 = 0;
  for (; ms < 6000; ms += TARN__KREG_BEAT_MS) {
    assert_int_equal(tarn__kregistry_refresh(r1), 0);
    if (beats_of_6 < 2) /* node 6 beats twice, then stops */
      assert_int_equal(tarn__kregistry_refresh(r2), 0), beats_of_6++;
    assert_int_equal(tarn__kregistry_live(r1, &v, &n), 0);
    free(v);
    if (n == 1)
      break;
    usleep(TARN__KREG_BEAT_MS * 1000);
  }
  assert_int_equal(n, 1);
  assert_true(ms >= 2500 && ms <= 4500); /* 3 s after its last beat, not sooner */
  tarn_meta_rec rec;
  assert_int_equal(tarn_meta_get(m1, TARN__KREG_PARTITION, "/nodes/0000000006", &rec), 0);
  tarn_meta_rec_free(&rec); /* its session lives: the record stays */
  assert_int_equal(tarn__kregistry_owner_alive(r1, 0x66), 0); /* its claims: a dead node's */
  /* node 6 beats again: back at node 5's next read */
  assert_int_equal(tarn__kregistry_refresh(r2), 0);
  assert_int_equal(tarn__kregistry_refresh(r1), 0);
  assert_int_equal(tarn__kregistry_live(r1, &v, &n), 0);
  free(v);
  assert_int_equal(n, 2);
  tarn__kregistry_close(r2);
  tarn__kregistry_close(r1);
  tarn_meta_close(m2);
  tarn_meta_close(m1);
}

static void pick_is_deterministic_and_spreads(void **state) {
  (void)state;
  size_t count[3] = {0};
  for (uint32_t p = 0; p < 300; p++) {
    uint8_t key[20] = {0};
    key[16] = (uint8_t)(p >> 24), key[17] = (uint8_t)(p >> 16), key[18] = (uint8_t)(p >> 8);
    key[19] = (uint8_t)p;
    size_t i = tarn__kregistry_pick(3, key, sizeof key);
    assert_true(i < 3);
    assert_int_equal(i, tarn__kregistry_pick(3, key, sizeof key));
    count[i]++;
  }
  for (int i = 0; i < 3; i++)
    assert_true(count[i] > 50); /* every node leads some partitions */
  assert_int_equal(tarn__kregistry_pick(1, "g", 1), 0);
}

/* issue 15: the leader of a partition is a rendezvous pick, so a node
 * leaving moves exactly the partitions it led (an express log changes hands
 * only when its own leader goes), and every node spreads over some. */
static void leader_moves_only_the_leavers_partitions(void **state) {
  (void)state;
  tarn__knode_info live[4], rest[3];
  memset(live, 0, sizeof live);
  for (int i = 0; i < 4; i++)
    live[i].node_id = 10 + 7 * i;
  size_t count[4] = {0};
  uint8_t topic[16];
  for (int i = 0; i < 16; i++)
    topic[i] = (uint8_t)(i * 37 + 1);
  for (size_t gone = 0; gone < 4; gone++) {
    size_t k = 0;
    for (size_t i = 0; i < 4; i++)
      if (i != gone)
        rest[k++] = live[i];
    for (uint32_t p = 0; p < 400; p++) {
      size_t a = tarn__kregistry_leader(live, 4, topic, p);
      assert_true(a < 4);
      assert_int_equal(a, tarn__kregistry_leader(live, 4, topic, p));
      if (gone == 0)
        count[a]++;
      int32_t b = rest[tarn__kregistry_leader(rest, 3, topic, p)].node_id;
      if (a != gone)
        assert_int_equal(b, live[a].node_id); /* a survivor's partition stays */
    }
  }
  for (int i = 0; i < 4; i++)
    assert_true(count[i] > 50);
  assert_int_equal(tarn__kregistry_leader(live, 1, topic, 3), 0);
}

int main(int argc, char **argv) {
  const char *variant = argc > 1 ? argv[1] : "mem";
  if (strcmp(variant, "sqlite") == 0) {
    dir = tu_tmpdir("kreg");
    snprintf(uri, sizeof uri, "sqlite:%s/meta.db", dir);
  } else {
    snprintf(uri, sizeof uri, "mem:kafka-registry");
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nodes_see_each_other),
      cmocka_unit_test(refresh_writes_a_lost_record),
      cmocka_unit_test(a_silent_node_leaves_the_list),
      cmocka_unit_test(pick_is_deterministic_and_spreads),
      cmocka_unit_test(leader_moves_only_the_leavers_partitions),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (dir) {
    tu_rmtree(dir);
    free(dir);
  }
  return rc;
}
