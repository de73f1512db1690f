/** What a command is given of the process: its environment and its output streams. */
import type { JobIo } from '../job/job.js';

export interface Io extends JobIo {
  stdout: NodeJS.WritableStream;
}
