/**
 * Submit an experiment: validate (the caller loaded the spec; a SpecError never gets here, so
 * an invalid spec writes nothing), plan, check it can ever run on the registered cards, then
 * register the spec, its hash, the plan, the submitter's signature over them (the submit token,
 * jobs/submit-signature.ts: the scheduler acts on nothing unsigned) and every block's state in Redis in one script
 * (register-experiment.lua), which also puts it in the scheduler's active set. That is the whole
 * submission: the leader's grant pass drives every block of an active experiment from its state
 * (no job per block), and settles the experiment once every block ended.
 */
import type { Redis } from 'ioredis';
import { NO_CARD_CAN_RUN, unmetRequirements } from '../../jobs/card-requirements.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { gangPlacement, type Plan, planExperiment } from '../../jobs/plan.ts';
import { signSubmission } from '../../jobs/submit-signature.ts';
import { allows, CAPABILITY_FLAG, describeNeed, specNeeds } from '../../jobs/worker-capabilities.ts';
import { type Card, CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore, initialBlockState } from '../../store/experiment-store.ts';
import { wakeScheduler } from '../../store/scheduler-wake.ts';
import { requireSubmitToken } from '../../store/submit-token.ts';
import { cardNeed, cardSlot, neverFits } from '../scheduler/grant-planner.ts';
import type { LoadedSpec } from '../spec/load-spec.ts';

export interface SubmitInput {
  redis: Redis;
  prefix: string;
  /** its `text` is registered verbatim: the spec its hash is of (orchestrator/spec/load-spec.ts) */
  loaded: LoadedSpec;
  /** refuse now when no registered card can run a block, instead of waiting for one */
  noWait?: boolean;
  /** the experiment's id, chosen by a caller that records it before submitting (a nightly run); default ExperimentStore.newId(name) */
  id?: string;
  /** the submit token the record is signed with (jobs/submit-signature.ts); default: from the environment (store/submit-token.ts) */
  submitToken?: Buffer;
}

export interface Submitted {
  id: string;
  plan: Plan;
  /** set when the experiment waits for cards that are not registered now */
  waitingFor: string | null;
}

export async function submitExperiment(input: SubmitInput): Promise<Submitted> {
  const { redis, prefix, loaded } = input;
  // before anything is read or written: a submitter without a token has nothing to submit with
  const token = input.submitToken ?? requireSubmitToken('orch submit');
  const plan = planExperiment(loaded.spec, loaded.hash);
  const store = new ExperimentStore(redis, prefix);
  const waitingFor = await checkPlacement(redis, prefix, loaded, plan, input.noWait ?? false);

  const id = input.id ?? (await store.newId(plan.name));
  const record: Record<string, string> = {
    id,
    name: plan.name,
    hash: loaded.hash,
    state: 'queued',
    created: String(Date.now()),
    priority: String(loaded.spec.priority),
    spec: loaded.text,
    spec_json: JSON.stringify(loaded.spec),
    plan: JSON.stringify(plan),
    file: loaded.file,
  };
  // what the scheduler acts on, signed as it will read it back (JSON values of spec and plan)
  record.submit_sig = signSubmission(
    {
      id,
      hash: loaded.hash,
      priority: loaded.spec.priority,
      specText: loaded.text,
      spec: JSON.parse(record.spec_json!),
      plan: JSON.parse(record.plan!),
    },
    token,
  );
  const blocks = plan.blocks.map((b) => [String(b.index), JSON.stringify(initialBlockState(b.index))]);
  await store.register(id, record, blocks);

  // The leader's grant pass finds the experiment in the active set and drives its blocks
  // (grant-loop.ts); the wake only saves it waiting for its next tick.
  await wakeScheduler(redis, prefix);
  return { id, plan, waitingFor };
}

/**
 * Refuses a block no registered host can ever hold (more ranks than the largest host has
 * cards). A block that waits for cards not registered now (no CUDA card, none that meets the
 * workload's `requires`, no host at all) is accepted and waits — unless `noWait`.
 */
async function checkPlacement(
  redis: Redis,
  prefix: string,
  loaded: LoadedSpec,
  plan: Plan,
  noWait: boolean,
): Promise<string | null> {
  const registry = new CardRegistry(redis, { prefix });
  const all = await registry.all();
  const live = await registry.liveOf(all);
  const block = {
    key: 'b0',
    ranks: plan.ranks,
    ...cardNeed(loaded),
    ...gangPlacement(plan.placement),
    expectedMs: 0,
  };
  const where = `${loaded.file}: blocks.ranks = ${plan.ranks}, placement ${plan.placement}`;
  // Too many ranks for every registered host, whatever backend or requirement: no waiting helps.
  const { requires: _anyCard, ...counted } = block;
  const anyBackend = neverFits({ ...counted, backend: 'any' }, all.map(cardSlot));
  if (anyBackend && all.length > 0) {
    throw new UserInputError('TOO_MANY_RANKS', `${where}: ${anyBackend}`, {
      hint:
        plan.placement === 'host'
          ? 'lower blocks.ranks, register a larger host, or set blocks.placement: spread (or host_then_spread) to run the gang across hosts'
          : 'lower blocks.ranks or register more cards (all hosts together have fewer than the gang needs)',
    });
  }
  refuseDisallowed(loaded, all);
  const why = neverFits(block, live.map(cardSlot));
  const unmet = live.length > 0 ? unmetRequirements(block.requires, live) : null;
  if (unmet && noWait) {
    throw new UserInputError('NO_MATCHING_CARDS', `${NO_CARD_CAN_RUN}: ${loaded.file}: ${unmet}`, {
      hint: 'start `orch worker` on a host whose card meets workload.requires (without --no-wait, a cluster queues the spec until one registers), or change workload.requires',
    });
  }
  if (why && noWait) {
    throw new UserInputError('NO_MATCHING_CARDS', `${where}: cannot start now: ${why}`, {
      hint: 'drop --no-wait to queue it until such cards register, or change workload.backend',
    });
  }
  return why;
}

/**
 * Refuses a spec whose work no registered worker allows (jobs/worker-capabilities.ts): a command
 * workload where no worker runs commands, builds of commits where none builds them. Waiting
 * would not help: a worker's permissions are its operator's choice. With no worker registered
 * at all the spec waits, as for cards.
 */
function refuseDisallowed(loaded: LoadedSpec, all: readonly Card[]): void {
  const need = specNeeds(loaded.spec);
  if (need.length === 0 || all.length === 0 || all.some((c) => allows(c, need))) return;
  const hosts = [...new Set(all.map((c) => c.host))];
  const missing = need.filter((cap) => !all.some((c) => allows(c, [cap])));
  throw new UserInputError(
    'WORK_NOT_ALLOWED',
    `${loaded.file}: the spec runs ${describeNeed(need)}, and no registered worker allows ${missing.length === need.length ? 'it' : describeNeed(missing)} (hosts: ${hosts.join(', ')}); nothing was registered`,
    {
      hint: `start a worker with ${missing.map((c) => CAPABILITY_FLAG[c]).join(' ')} on a host that may run the submitter's code${need.includes('build') ? ", or drop builds: to measure the workers' own graphrt" : ''}`,
    },
  );
}
