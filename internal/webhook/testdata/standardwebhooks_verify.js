// Verifies keeper's webhook deliveries with the reference Standard Webhooks
// library (npm "standardwebhooks"), which nobody in keeper wrote. Reads a
// JSON array of {secret, headers, body} on stdin; prints a JSON array of
// {ok, error} in the same order.
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ secret, headers, body }) => {
    try {
      new Webhook(secret).verify(body, headers);
      return { ok: true };
    } catch (e) {
      return { ok: false, error: String(e && e.message) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
