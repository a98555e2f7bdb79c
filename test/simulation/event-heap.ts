/** Whether an event at (time a, order a) runs before one at (time b, order b). */
const precedes = (timeA: number, orderA: number, timeB: number, orderB: number): boolean =>
  timeA < timeB || (timeA === timeB && orderA < orderB);

/**
 * A discrete-event clock: callbacks ordered by time, and among equal times by when they were
 * scheduled (so a job woken at `now` runs after what was already due at `now`). A binary heap over
 * parallel arrays: a run of a million events allocates nothing per event beyond its callback.
 */
export class EventHeap {
  /** The time of the event being run, in milliseconds. */
  now: number;
  private readonly times: number[] = [];
  private readonly orders: number[] = [];
  private readonly actions: (() => void)[] = [];
  private scheduled = 0;

  constructor(start: number) {
    this.now = start;
  }

  /** Runs `action` at `time`, or now if `time` has passed. */
  at(time: number, action: () => void): void {
    const t = Math.max(time, this.now);
    const order = this.scheduled++;
    let i = this.times.length;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!precedes(t, order, this.times[parent] as number, this.orders[parent] as number)) break;
      this.move(parent, i);
      i = parent;
    }
    this.put(i, t, order, action);
  }

  /** Runs every event in order, including those the events schedule, until none is left. */
  run(): void {
    while (this.times.length > 0) {
      const time = this.times[0] as number;
      const action = this.actions[0] as () => void;
      this.removeFirst();
      this.now = time;
      action();
    }
  }

  private removeFirst(): void {
    const time = this.times.pop() as number;
    const order = this.orders.pop() as number;
    const action = this.actions.pop() as () => void;
    const size = this.times.length;
    if (size === 0) return;
    // The last event sifts down from the root.
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= size) break;
      const right = left + 1;
      const child =
        right < size && precedes(this.times[right] as number, this.orders[right] as number, this.times[left] as number, this.orders[left] as number)
          ? right
          : left;
      if (!precedes(this.times[child] as number, this.orders[child] as number, time, order)) break;
      this.move(child, i);
      i = child;
    }
    this.put(i, time, order, action);
  }

  private move(from: number, to: number): void {
    this.put(to, this.times[from] as number, this.orders[from] as number, this.actions[from] as () => void);
  }

  private put(index: number, time: number, order: number, action: () => void): void {
    this.times[index] = time;
    this.orders[index] = order;
    this.actions[index] = action;
  }
}
