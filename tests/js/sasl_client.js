// kafkajs over a SASL_SSL listener, for tests/integration/test_sasl_ssl_client_matrix.py. Test code only.
//
//   node sasl_client.js BOOTSTRAP TOPIC N MECHANISM USER PASSWORD CA_PEM
//         MECHANISM: plain or scram-sha-512 (kafkajs's names). Produces N records keyed k<i> with values v<i>
//         (acks=-1), prints "ACKED <n>"; then consumes the topic from the start in a group of its own, printing
//         "RECORD <key> <value>" for each and "CONSUMED <n>" (within 30 s).
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, n, mechanism, username, password, ca] = process.argv.slice(2);
  const count = parseInt(n, 10);
  const kafka = new Kafka({
    clientId: "kafkalab-kafkajs", brokers: bootstrap.split(","), logLevel: logLevel.ERROR,
    ssl: { ca: [fs.readFileSync(ca, "utf-8")] }, sasl: { mechanism, username, password },
    connectionTimeout: 10000, retry: { retries: 5 },
  });
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  const acked = await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();
  console.log(`ACKED ${acked.length ? count : 0}`);
  const consumer = kafka.consumer({ groupId: `kafkajs-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let consumed = 0;
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        console.log(`RECORD ${message.key.toString()} ${message.value.toString()}`);
        consumed++;
        if (consumed >= count) { clearTimeout(timer); resolve(); }
      },
    });
  });
  await consumer.disconnect();
  console.log(`CONSUMED ${consumed}`);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
