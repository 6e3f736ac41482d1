// Verifies recorded webhook deliveries with the reference TypeScript library of Standard
// Webhooks (`standardwebhooks`, pinned in package.json), not with govdata's own code.
// Usage: node verify-webhooks.mjs <recorded.json>, the file holding
// {"secrets": ["whsec_…"], "messages": [{"headers": {"webhook-id": …}, "body": "…"}]}.
// Each message must verify under one of the secrets, and fail once its body is altered.
// Prints {"verified": N, "types": [...]} and exits non-zero on the first failure.
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const recorded = JSON.parse(readFileSync(process.argv[2], "utf8"));
const types = [];
for (const [i, m] of recorded.messages.entries()) {
  const verified = recorded.secrets.map((secret) => {
    try {
      return new Webhook(secret).verify(m.body, m.headers);
    } catch {
      return null;
    }
  });
  const payload = verified.find((v) => v !== null);
  if (!payload) {
    console.error(`message ${i} (${m.headers["webhook-id"]}) does not verify`);
    process.exit(1);
  }
  for (const secret of recorded.secrets) {
    let tampered = false;
    try {
      new Webhook(secret).verify(m.body + " ", m.headers);
    } catch {
      tampered = true;
    }
    if (!tampered) {
      console.error(`message ${i}: an altered body still verifies`);
      process.exit(1);
    }
  }
  types.push(payload.type);
}
console.log(JSON.stringify({ verified: recorded.messages.length, types }));
