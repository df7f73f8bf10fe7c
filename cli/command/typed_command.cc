#include "cli/command/typed_command.h"

#include <cstdlib>

#include "cli/verbs/remote.h"
#include "swarm/base/error.h"

namespace cli {

namespace {

// One option of the table as CLI11 takes it, its value set in `request`.
void bind_option(CLI::App& cmd, const BoundOption& o, const std::shared_ptr<void>& request) {
  const OptionSpec& s = o.spec;
  const std::string names = s.alias.empty() ? s.name : s.alias + "," + s.name;
  auto set = o.set;
  CLI::Option* option = nullptr;
  switch (s.kind) {
    case OptionSpec::Kind::flag:
      option = cmd.add_flag_function(names, [request, set](std::int64_t) { set(request.get(), OptionValue{.flag = true}); }, s.help);
      break;
    case OptionSpec::Kind::text:
      option = cmd.add_option_function<std::string>(
          names, [request, set](const std::string& v) { set(request.get(), OptionValue{.text = v}); }, s.help);
      break;
    case OptionSpec::Kind::texts:
      option = cmd.add_option_function<std::vector<std::string>>(
          names, [request, set](const std::vector<std::string>& v) { set(request.get(), OptionValue{.texts = v}); }, s.help);
      break;
    case OptionSpec::Kind::number:
      option = cmd.add_option_function<std::int64_t>(
          names, [request, set](const std::int64_t& v) { set(request.get(), OptionValue{.number = v}); }, s.help);
      option->transform(decimal_in(s.min, s.max));
      break;
  }
  if (!s.value_name.empty()) option->option_text(s.value_name);
  if (!s.env.empty()) option->envname(s.env);
  if (s.required) option->required();
  // The check's own message first; the choices for completion too.
  if (s.check) option->check(validator_of(s.check, s.value_name.empty() ? "VALUE" : s.value_name.c_str()));
  if (!s.choices.empty()) option->check(CLI::IsMember(s.choices));
}

// Whether this process answers the verb itself or hands it to the run
// whose socket $SWARM_SOCKET names.
std::string socket_path() {
  const char* path = std::getenv(kSocketVariable);
  return path != nullptr ? path : "";
}

}  // namespace

void bind_options(CLI::App& cmd, const std::vector<BoundOption>& options, const std::shared_ptr<void>& request) {
  for (const auto& o : options) bind_option(cmd, o, request);
}

Verb add_typed(CLI::App& app, const VerbSpec& verb, CommandExtras extras) {
  CLI::App* cmd = app.add_subcommand(verb.words.back(), verb.summary);
  // One request per parse: run_command_line makes its verbs anew each time.
  auto request = std::make_shared<std::shared_ptr<void>>(verb.make());
  for (const auto& o : verb.options)
    if (!o.spec.resolved) bind_option(*cmd, o, *request);
  if (extras.options) extras.options(*cmd);
  if (!verb.footer.empty()) cmd->footer(verb.footer);
  return {cmd, [&verb, request, extras](Context& ctx) {
            void* r = request->get();
            // The front end's own (status --watch, log --follow) checks
            // the request as it takes it, before any I/O.
            if (extras.instead)
              if (auto code = extras.instead(r, ctx)) return *code;
            verb.validate(r);
            verb.resolve(r, ctx);
            PrintingReporter report(ctx.out());
            const std::string path = socket_path();
            if (!path.empty()) {
              try {
                return print_result(ctx.out(), call_remote(path, verb, r, ctx, report));
              } catch (const SocketUnreachable& e) {
                return ctx.out().error(e.kind(), e.what());  // the socket's, not the workspace server's
              }
            }
            ctx.set_presentation(terminal_presentation());
            ctx.set_draws_progress(true);
            return print_result(ctx.out(), run_verb(verb, r, ctx, report));
          }};
}

Verb add_renew(CLI::App& app) { return add_typed(app, *typed_verb({"renew"})); }
Verb add_send(CLI::App& app) { return add_typed(app, *typed_verb({"send"})); }
Verb add_inbox(CLI::App& app) { return add_typed(app, *typed_verb({"inbox"})); }
Verb add_ack(CLI::App& app) { return add_typed(app, *typed_verb({"ack"})); }
Verb add_ask(CLI::App& app) { return add_typed(app, *typed_verb({"ask"})); }
Verb add_hold(CLI::App& app) { return add_typed(app, *typed_verb({"hold"})); }
Verb add_holds(CLI::App& app) { return add_typed(app, *typed_verb({"holds"})); }
Verb add_evict(CLI::App& app) { return add_typed(app, *typed_verb({"evict"})); }
Verb add_cwd(CLI::App& app) { return add_typed(app, *typed_verb({"cwd"})); }
Verb add_commit(CLI::App& app) { return add_typed(app, *typed_verb({"commit"})); }
Verb add_close(CLI::App& app) { return add_typed(app, *typed_verb({"close"})); }
Verb add_sync(CLI::App& app) { return add_typed(app, *typed_verb({"sync"})); }
Verb add_doctor(CLI::App& app) { return add_typed(app, *typed_verb({"doctor"})); }
Verb add_branches(CLI::App& app) { return add_typed(app, *typed_verb({"branches"})); }
Verb add_join(CLI::App& app) { return add_typed(app, *typed_verb({"join"})); }

}  // namespace cli
