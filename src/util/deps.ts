import { type Clock, type Random, systemClock, systemRandom } from "./clock.js";
import { type Logger, silentLogger } from "./logger.js";

/** What policies take from outside: time, chance and a place to log. Tests pass fakes. */
export interface Deps {
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
}

export const systemDeps: Deps = Object.freeze({ clock: systemClock, random: systemRandom, logger: silentLogger });
