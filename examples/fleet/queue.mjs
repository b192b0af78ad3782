// What the driver and the workers share: the queue's name and how to reach
// its Redis (REDIS_URL, by default redis://127.0.0.1:6379).
import { Redis } from "ioredis";

export const QUEUE = "koma-tasks";

/** A connection to the queue's Redis, as BullMQ needs it (its blocking calls wait as long as they need). */
export function connect(url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379") {
  return new Redis(url, { maxRetriesPerRequest: null });
}
