// What the gateway adds to SQS's answers and tells of them: the SenderId of each message received
// (the emulator cannot know the signer), and every message sent and queue created, for whoever
// listens (the fleet simulator's doorbell).
import type { IncomingHttpHeaders } from "node:http";
import type { GatewayPrincipal, MessageSent } from "./gateway.js";
import { userIdOf } from "./requests.js";

/** Senders remembered at most, the oldest dropped first. */
const SENDERS_MAX = 200_000;

export class SqsMessages {
  /**
   * message id → SenderId of who sent it (SQS's `<role id>:<session>`), so ReceiveMessage answers
   * name the signer as SQS does.
   */
  private readonly senders = new Map<string, string>();
  /**
   * queue name → the sends forwarded to it whose answers are not read yet. SQS hands a message to
   * a waiting receive as soon as it stores it, so the receive's answer can overtake the send's,
   * which names the message: such a receive waits for those sends before naming its senders.
   */
  private readonly sending = new Map<string, Set<Promise<void>>>();
  readonly sentListeners: ((sent: MessageSent) => void)[] = [];
  readonly createdListeners: ((queueName: string) => void)[] = [];

  constructor(private readonly principal: (accessKeyId: string) => GatewayPrincipal | undefined) {}

  queueNameOf(body: Buffer): string {
    let url = "";
    try {
      url = String((JSON.parse(body.toString("utf8") || "{}") as { QueueUrl?: string }).QueueUrl ?? "");
    } catch {
      // a malformed request: SQS answers it, and no receive waits on it
    }
    return url.slice(url.lastIndexOf("/") + 1);
  }
  /** A send to `queue` is under way: returns what ends it, whatever became of it. */
  beginSend(queue: string): () => void {
    let done!: () => void;
    const p = new Promise<void>((resolve) => {
      done = resolve;
    });
    const set = this.sending.get(queue) ?? new Set();
    this.sending.set(queue, set.add(p));
    return () => {
      done();
      set.delete(p);
      if (set.size === 0 && this.sending.get(queue) === set) this.sending.delete(queue);
    };
  }
  /** After SQS answered 200 to a send: one event per message it took. */
  announceSent(op: string, body: Buffer, answer: Buffer): void {
    const req = JSON.parse(body.toString("utf8")) as {
      QueueUrl?: string;
      DelaySeconds?: number;
      MessageBody?: string;
      Entries?: { Id: string; DelaySeconds?: number; MessageBody?: string }[];
    };
    const queueUrl = String(req.QueueUrl ?? "");
    const messages =
      op === "SendMessage"
        ? [{ delaySeconds: req.DelaySeconds ?? 0, body: req.MessageBody ?? "" }]
        : (() => {
            const ok = new Set(
              (
                (JSON.parse(answer.toString("utf8")) as { Successful?: { Id: string }[] }).Successful ?? []
              ).map((e) => e.Id),
            );
            return (req.Entries ?? [])
              .filter((e) => ok.has(e.Id))
              .map((e) => ({ delaySeconds: e.DelaySeconds ?? 0, body: e.MessageBody ?? "" }));
          })();
    for (const m of messages) for (const l of this.sentListeners) l({ queueUrl, ...m });
  }
  /** SQS's SenderId of the request's signer, or undefined for an unknown key. */
  senderOf(headers: IncomingHttpHeaders): string | undefined {
    const key = /Credential=([^/,\s]+)\//.exec(headers.authorization ?? "")?.[1];
    const principal = key ? this.principal(key) : undefined;
    return principal ? userIdOf(principal) : undefined;
  }
  rememberSenders(op: string, answer: Buffer, sender: string | undefined): void {
    if (!sender) return;
    const a = JSON.parse(answer.toString("utf8")) as {
      MessageId?: string;
      Successful?: { MessageId: string }[];
    };
    const ids = op === "SendMessage" ? [a.MessageId] : (a.Successful ?? []).map((e) => e.MessageId);
    for (const id of ids) {
      if (!id) continue;
      if (this.senders.size >= SENDERS_MAX) this.senders.delete(this.senders.keys().next().value as string);
      this.senders.set(id, sender);
    }
  }
  /** A ReceiveMessage answer with each message's SenderId, when the request asked for it. */
  async withSenders(request: Buffer, answer: Buffer): Promise<Buffer> {
    const req = JSON.parse(request.toString("utf8")) as {
      AttributeNames?: string[];
      MessageSystemAttributeNames?: string[];
    };
    const asked = [...(req.AttributeNames ?? []), ...(req.MessageSystemAttributeNames ?? [])];
    if (!asked.includes("SenderId") && !asked.includes("All")) return answer;
    const a = JSON.parse(answer.toString("utf8")) as {
      Messages?: { MessageId?: string; Attributes?: Record<string, string> }[];
    };
    const pending = this.sending.get(this.queueNameOf(request));
    if (pending && (a.Messages ?? []).some((m) => m.MessageId && !this.senders.has(m.MessageId))) {
      await Promise.all([...pending]);
    }
    for (const m of a.Messages ?? []) {
      const sender = m.MessageId ? this.senders.get(m.MessageId) : undefined;
      if (sender) m.Attributes = { ...m.Attributes, SenderId: sender };
    }
    return Buffer.from(JSON.stringify(a));
  }
}
